package vllm

import (
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"
)

// The hints that name a command word it through the caller and name the namespace.
func TestErrorHints(t *testing.T) {
	cmd := func(c next.Command) string { return "ain " + string(c) }
	for _, c := range []struct {
		err  next.Hinter
		want string
	}{
		{&NoReadyReplicaError{Name: "qwen", Namespace: "llm"}, "`ain serve status qwen -n llm` shows what the pods are doing"},
		{&AmbiguousError{}, "pass --endpoint (`ain serve status` shows each URL)"},
		{&EntryTLSError{Field: "gateway"}, "--set gateway.tlsSecret=NAME"},
		{&BadKeyError{Secret: "s", Key: "k"}, "kubectl create secret generic s --from-literal=k=..."},
		{&RouteError{Route: RouteStatus{Name: "qwen", Accepted: "RefNotPermitted"}}, "`ain serve status` shows whether the Service exists"},
	} {
		if got := c.err.Hint(cmd); !strings.Contains(got, c.want) {
			t.Errorf("%T: %s, want ~%s", c.err, got, c.want)
		}
	}
}
