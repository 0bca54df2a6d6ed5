package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ain-hpc/ain/pkg/preflight"
)

// Issue 19, least privilege: a ServiceAccount bound only to the Role `ain preflight
// --print-role` prints (no cluster-wide rights at all), with a real token from the TokenRequest
// API and the sandbox's API server authorizing with RBAC (pkg/sandbox/up.go:
// --authorization-mode=RBAC), runs the preflight, train, logs, delete, bench and serve. What
// needs cluster scope (listing nodes) is a WARN naming the missing verb, never a crash.
func TestLeastPrivilegeRole(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	// The Role as printed, applied by the admin.
	out, errOut, code := run(t, c.env, "preflight", "--print-role", "-n", c.ns, "--subject", "ServiceAccount:student")
	if code != 0 {
		t.Fatalf("--print-role: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "kind: Role\n") || !strings.Contains(out, "kind: RoleBinding\n") || !strings.Contains(out, "- patch") || strings.Contains(out, "ClusterRole") {
		t.Fatalf("--print-role printed:\n%s", out)
	}
	role, binding := preflight.Role(c.ns, mustSubject(t, "ServiceAccount:student", c.ns))
	if _, err := c.cs.CoreV1().ServiceAccounts(c.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "student"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.RbacV1().Roles(c.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.RbacV1().RoleBindings(c.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := c.sb.ServiceAccountKubeconfig(t, c.ns, "student")
	// The token really is a namespaced user: it cannot list nodes.
	if _, err := clientFor(t, path).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the student can list nodes: the test would prove nothing")
	}

	env := map[string]string{"HOME": t.TempDir()}
	as := func(args ...string) (string, string, int) {
		t.Helper()
		o, e, code := run(t, env, append(args, "--kubeconfig", path)...)
		t.Logf("ain %s: exit %d\n%s\n%s", strings.Join(args, " "), code, o, e)
		return o, e, code
	}
	cases := 0
	check := func(what string, code, want int, text, must string) {
		t.Helper()
		cases++
		if code != want {
			t.Errorf("%s: exit %d, want %d", what, code, want)
		}
		if must != "" && !strings.Contains(text, must) {
			t.Errorf("%s: output lacks %q", what, must)
		}
		for _, bad := range []string{"panic", "goroutine "} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: %s in the output", what, bad)
			}
		}
	}
	// The admin's passing preflight, cached in the same HOME, is not the student's: the cache
	// is per user (issue 19: a student was told "6 PASS (cached)", then got forbidden).
	if o, e, code := run(t, env, "preflight", "qlora", "--kubeconfig", c.sb.Kubeconfig, "-n", c.ns); code != 0 {
		t.Fatalf("admin preflight: exit %d\n%s\n%s", code, o, e)
	}
	o, e, code := as("train", "qlora", "--name", "rb", "--timeout", "3m")
	check("train", code, 0, o+e, "Succeeded")
	if strings.Contains(e, "(cached") {
		t.Errorf("the student's train reused the admin's cached preflight:\n%s", e)
	}
	o, e, code = as("preflight", "qlora")
	check("preflight", code, 0, o+e, "list nodes")
	o, e, code = as("train", "qlora", "--name", "rb-dry", "--dry-run=server")
	check("train --dry-run=server", code, 0, o+e, "nothing was created")
	o, e, code = as("status", "rb")
	check("status", code, 0, o+e, "Succeeded")
	o, e, code = as("logs", "rb")
	check("logs", code, 0, o+e, "NCCL")
	o, e, code = as("delete", "rb", "--yes")
	check("delete", code, 0, o+e, "deleted PyTorchJob/rb")
	o, e, code = as("bench", "allreduce", "--algo", "ring", "--out", filepath.Join(t.TempDir(), "b"), "--timeout", "3m")
	check("bench allreduce", code, 0, o+e, "ring")
	o, e, code = as("serve", "vllm", "--name", "rbs", "--no-wait")
	check("serve", code, 0, o+e, "applied Deployment")
	o, e, code = as("serve", "status", "rbs")
	check("serve status", code, 0, o+e, "rbs")
	o, e, code = as("serve", "delete", "rbs")
	check("serve delete", code, 0, o+e, "deleted")
	// A Role without Services: the API key's Secret goes in before the Service is refused; the
	// output names it and the command that removes it (issue 32: it was left unmentioned).
	for i := range role.Rules {
		role.Rules[i].Resources = slices.DeleteFunc(role.Rules[i].Resources, func(r string) bool { return r == "services" })
	}
	if _, err := c.cs.RbacV1().Roles(c.ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o, e, code = as("serve", "vllm", "--name", "rbs2", "--no-wait")
	check("serve without services", code, 8, o+e, "created before the error below: Secret "+c.ns+"/rbs2-tls, Secret "+c.ns+"/rbs2-api-key; `ain serve delete rbs2")
	// Given the right back, the student removes what the refused run left.
	if _, err := c.cs.RbacV1().Roles(c.ns).Update(ctx, preflightRole(c.ns), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC authorizer sees the change through its informer, soon after.
	for i := 0; ; i++ {
		if _, err := clientFor(t, path).CoreV1().Services(c.ns).List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if i == 100 {
			t.Fatalf("the restored Role does not let the student list services: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	o, e, code = as("serve", "delete", "rbs2")
	check("serve delete after a refused apply", code, 0, o+e, "rbs2-api-key")
	if _, err := c.cs.CoreV1().Secrets(c.ns).Get(ctx, "rbs2-api-key", metav1.GetOptions{}); err == nil {
		t.Error("serve delete left the API key's Secret of the refused apply")
	}
	t.Logf("least privilege: %d commands run as a namespaced ServiceAccount", cases)
}

// preflightRole is the Role `ain preflight --print-role` prints for the student.
func preflightRole(ns string) *rbacv1.Role {
	role, _ := preflight.Role(ns, rbacv1.Subject{Kind: "ServiceAccount", Name: "student", Namespace: ns})
	return role
}

func mustSubject(t *testing.T, s, ns string) rbacv1.Subject {
	t.Helper()
	subj, err := preflight.Subject(s, ns)
	if err != nil {
		t.Fatal(err)
	}
	return subj
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
