package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/next"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseStack(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Stack
		err  bool
	}{
		{"", StackCurrent, false},
		{"current", StackCurrent, false},
		{"Legacy", StackLegacy, false},
		{"v1", "", true},
	} {
		got, err := ParseStack(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseStack(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--stack") {
			t.Errorf("ParseStack(%q): the error does not name the flag: %v", tc.in, err)
		}
	}
	if err := (Config{Stack: "v2"}).WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "--stack") {
		t.Errorf("Validate with stack v2: %v", err)
	}
	// A state written before stacks existed ran the training-operator.
	if got := (&State{}).Stack(); got != StackLegacy {
		t.Errorf("stack of a state without one = %q, want legacy", got)
	}
	names := func(cs []Component) string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return strings.Join(n, " ")
	}
	if got := names(StackCurrent.Components()); got != "etcd trainer jobset mpi-operator kwok kubernetes coredns" {
		t.Errorf("current components: %s", got)
	}
	if got := names(StackLegacy.Components()); got != "etcd kwok training-operator kubernetes coredns" {
		t.Errorf("legacy components: %s", got)
	}
}

// moduleDir is the folder of a module of ain's own go.mod in the module cache.
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go list -m %s: %v", mod, err)
	}
	return strings.TrimSpace(string(out))
}

// TestWebhookConfigsFromModules reads the webhook configurations of JobSet and Trainer as their
// builds copy them from the modules (same versions as ain's go.mod), and checks what the
// kustomize patches and the loopback rewrite must give: the overlay's names, the pod webhooks of
// JobSet limited to JobSet pods, Trainer's opt-out selector, and every webhook at a URL on
// 127.0.0.1 with the CA, none at a Service.
func TestWebhookConfigsFromModules(t *testing.T) {
	if testing.Short() {
		t.Skip("reads module sources through go list")
	}
	js, tr := t.TempDir(), t.TempDir()
	jsMod := filepath.Join(moduleDir(t, "sigs.k8s.io/jobset"), "config", "components", "webhook")
	if err := copyFiles(jsMod, js, "manifests.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := copyFiles(filepath.Join(jsMod, "patches"), js, "mutating-patch.yaml", "validating-patch.yaml"); err != nil {
		t.Fatal(err)
	}
	trMod := filepath.Join(moduleDir(t, "github.com/kubeflow/trainer/v2"), "manifests", "base", "webhook")
	if err := copyFiles(trMod, tr, "manifests.yaml", "patch_mutating.yaml", "patch_validating.yaml"); err != nil {
		t.Fatal(err)
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
	check := func(dir string, src webhookSource, want map[string][]string, selector map[string]string) {
		t.Helper()
		objs, eps, err := webhookConfigs(dir, src, ca)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, o := range objs {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				hm := h.(map[string]any)
				name := hm["name"].(string)
				got[o.GetName()] = append(got[o.GetName()], name)
				url, _, _ := unstructured.NestedString(hm, "clientConfig", "url")
				if !strings.HasPrefix(url, "https://127.0.0.1:"+strconv.Itoa(src.port)+"/") {
					t.Errorf("%s %s: url %q", o.GetName(), name, url)
				}
				if _, ok, _ := unstructured.NestedMap(hm, "clientConfig", "service"); ok {
					t.Errorf("%s %s: still points at a Service", o.GetName(), name)
				}
				if b, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle"); b == "" {
					t.Errorf("%s %s: no caBundle", o.GetName(), name)
				}
				exprs, _, _ := unstructured.NestedSlice(hm, "objectSelector", "matchExpressions")
				key := ""
				if len(exprs) == 1 {
					key = exprs[0].(map[string]any)["key"].(string)
				}
				if key != selector[name] {
					t.Errorf("%s %s: objectSelector key %q, want %q", o.GetName(), name, key, selector[name])
				}
			}
		}
		for cfg, hooks := range want {
			if strings.Join(got[cfg], ",") != strings.Join(hooks, ",") {
				t.Errorf("%s: webhooks %v, want %v (all: %v)", cfg, got[cfg], hooks, got)
			}
		}
		if len(eps) != len(want) {
			t.Errorf("%d endpoints recorded, want %d", len(eps), len(want))
		}
	}
	check(js, webhookSource{component: "jobset", port: 9443, namePrefix: "jobset-"}, map[string][]string{
		"jobset-mutating-webhook-configuration":   {"mjobset.kb.io", "mpod.kb.io"},
		"jobset-validating-webhook-configuration": {"vjobset.kb.io", "vpod.kb.io"},
	}, map[string]string{"mpod.kb.io": "jobset.sigs.k8s.io/jobset-name", "vpod.kb.io": "jobset.sigs.k8s.io/jobset-name"})
	check(tr, webhookSource{component: "trainer", port: 9444}, map[string][]string{
		"defaulter.trainer.kubeflow.org": {"defaulter.trainjob.trainer.kubeflow.org"},
		"validator.trainer.kubeflow.org": {"validator.clustertrainingruntime.trainer.kubeflow.org",
			"validator.trainingruntime.trainer.kubeflow.org", "validator.trainjob.trainer.kubeflow.org"},
	}, map[string]string{
		"validator.clustertrainingruntime.trainer.kubeflow.org": "trainer.kubeflow.org/webhook-validation",
		"validator.trainingruntime.trainer.kubeflow.org":        "trainer.kubeflow.org/webhook-validation",
	})
}

// TestUpRefusesAnotherStack: a state folder whose sandbox ran one stack keeps that stack's CRDs
// in its etcd data; starting the other stack there is refused before anything starts, with the
// way out named.
func TestUpRefusesAnotherStack(t *testing.T) {
	dir := t.TempDir()
	// A state from before stacks existed: it ran the training-operator.
	if err := saveState(&State{Dir: dir, Config: Config{Nodes: 1}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := Up(context.Background(), Options{Dir: dir, Cache: t.TempDir(), Config: Config{Stack: StackCurrent}, AgentCommand: []string{"true"}})
	var sm *StackMismatchError
	if !errors.As(err, &sm) || sm.Running != StackLegacy || !strings.Contains(err.Error(), "delete its state first") ||
		!slices.Equal(next.Of(err), []next.Command{"sandbox down --purge"}) {
		t.Fatalf("Up over a legacy sandbox with --stack current: %v", err)
	}
}
