package preflight

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// TestOptionsFor: a training recipe's shape, claims, data paths and image reach the options with
// the ranks' capabilities; a serving recipe's probe drops them; no recipe asks for nothing.
func TestOptionsFor(t *testing.T) {
	kc := &kube.Clients{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Kube: fake.NewSimpleClientset(), Namespace: "team", Server: "https://127.0.0.1:1"}
	train, err := recipe.Load("qlora", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFor(kc, train, profile.Default(), "busybox:test", time.Now)
	if o.Namespace != "team" || o.ProbeImage != "busybox:test" || o.Nodes < 1 || len(o.Volumes) == 0 || len(o.Storage.Paths) == 0 || !o.Storage.DefaultCapabilities || o.Tools.Image == "" {
		t.Errorf("training: %+v", o)
	}
	serve, err := recipe.Load("vllm", nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := OptionsFor(kc, serve, profile.Default(), "", time.Now); o.Storage.DefaultCapabilities {
		t.Error("serving: the probe keeps capabilities the vLLM pods drop")
	}
	if o := OptionsFor(kc, nil, profile.Default(), "", time.Now); o.Nodes != 0 || len(o.Storage.Paths) != 0 {
		t.Errorf("no recipe: %+v", o)
	}
}

// A serving recipe's replicas need no shape; its claims, the model on them and its image are
// still checked.
func TestOptionsForServing(t *testing.T) {
	serve, err := recipe.Load("vllm", nil)
	if err != nil {
		t.Fatal(err)
	}
	kc := &kube.Clients{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Kube: fake.NewSimpleClientset()}
	o := OptionsFor(kc, serve, profile.Default(), "", time.Now)
	if len(o.Volumes) != len(serve.Serving.Volumes) || len(o.Storage.Paths) == 0 || o.Storage.DefaultCapabilities || o.Tools.Image == "" || o.Nodes != 0 {
		t.Errorf("serving checks: %+v", o)
	}
}
