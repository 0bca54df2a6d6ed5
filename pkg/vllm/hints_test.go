package vllm

import (
	"errors"
	"fmt"
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
		{&StalledError{Server: "qwen", Namespace: "llm"}, "`ain serve status qwen -n llm` shows each pod"},
		{&WaitTimeoutError{Server: "qwen", Namespace: "llm"}, "it keeps starting: `ain serve status qwen -n llm`"},
		{&WaitTimeoutError{Server: "qwen", Gateway: true}, "the Gateway does not serve the route yet: `ain serve status qwen` shows the route's conditions"},
		{&RouteError{Route: RouteStatus{Name: "qwen", Accepted: "RefNotPermitted"}}, "`ain serve status` shows whether the Service exists"},
	} {
		if got := c.err.Hint(cmd); !strings.Contains(got, c.want) {
			t.Errorf("%T: %s, want ~%s", c.err, got, c.want)
		}
	}
}

// Deploy names its model server on the waits' errors, which do not know it (a rolling replica's).
func TestServerOf(t *testing.T) {
	p := &prepared{objs: &Objects{Name: "qwen"}, cl: &Cluster{Namespace: "llm"}}
	se := serverOf(fmt.Errorf("rolling: %w", &StalledError{Deployment: "qwen-0"}), p)
	var st *StalledError
	if !errors.As(se, &st) || st.Server != "qwen" || st.Namespace != "llm" {
		t.Errorf("stalled: %#v", st)
	}
	var te *WaitTimeoutError
	if !errors.As(serverOf(&WaitTimeoutError{What: "replica qwen-1"}, p), &te) || te.Server != "qwen" || te.Namespace != "llm" {
		t.Errorf("timeout: %#v", te)
	}
}
