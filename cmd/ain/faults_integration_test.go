package main

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/sandbox/sandboxtest"
)

// Issue 19, faults: an admission webhook the API server cannot call (its operator is down) was
// reported as "cannot reach the API server", though the API server answered. A validating
// webhook for PyTorchJobs in this test's namespace only, served by nothing (127.0.0.1:1), with
// failurePolicy Fail: the real API server refuses the apply the way it does with a killed
// training-operator, and ain names the webhook.
func TestWebhookDownNamed(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	url := "https://127.0.0.1:1/validate"
	name := "down-" + c.ns + ".ain.test"
	scope := admissionv1.NamespacedScope
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    name,
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"*"}, Resources: []string{"pytorchjobs"}, Scope: &scope}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": c.ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := c.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	for _, args := range [][]string{
		{"train", "qlora", "--name", "wh", "--skip-preflight", "--no-wait"},
		{"train", "qlora", "--name", "wh-dry", "--dry-run=server"},
	} {
		_, errOut, code := c.ain(t, args...)
		t.Logf("ain %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		if code != 7 {
			t.Errorf("%v: exit %d, want 7", args, code)
		}
		if !strings.Contains(errOut, `admission webhook "`+name+`"`) || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Errorf("%v: the webhook and why it failed are not named:\n%s", args, errOut)
		}
		if strings.Contains(errOut, "cannot reach the API server") {
			t.Errorf("%v: blamed the API server, which answered:\n%s", args, errOut)
		}
	}
}

// Issue 19: `ain logs` of a job whose pods are all Pending printed nothing and exited 0.
func TestLogsOfPendingJob(t *testing.T) {
	c := newCluster(t)
	if _, errOut, code := c.ain(t, "train", "qlora", "--name", "pend", "--set", "gpusPerNode=16", "--skip-preflight", "--no-wait"); code != 0 {
		t.Fatalf("submit: exit %d\n%s", code, errOut)
	}
	if _, ok := sandboxtest.Poll(60*time.Second, 500*time.Millisecond, func() bool {
		return len(c.pods(t, "training.kubeflow.org/job-name=pend")) > 0
	}); !ok {
		t.Fatal("the operator made no pods")
	}
	out, errOut, code := c.ain(t, "logs", "pend")
	t.Logf("exit %d\n%s\n%s", code, out, errOut)
	if code == 0 || !strings.Contains(errOut, "no log yet") || !strings.Contains(errOut, "Pending") || !strings.Contains(errOut, "ain status pend -n "+c.ns) {
		t.Errorf("logs of a Pending job: exit %d\n%s", code, errOut)
	}
}

// Issue 19: the preflight PASSed with the training-operator down, and `bench` then waited Pending
// forever. The test stops the sandbox's real training-operator by pid: the preflight FAILs naming
// its webhook and why the API server could not call it (exit 4, nothing created), train's gate
// FAILs too though a PASS of a minute ago is cached, and the preflight PASSes again once the
// operator is started again.
func TestPreflightOperatorDown(t *testing.T) {
	c := newCluster(t)
	preflightOut := func(label string) (string, int) {
		t.Helper()
		out, errOut, code := c.ain(t, "preflight", "qlora", "--no-probes")
		t.Logf("%s: exit %d\n%s\n%s", label, code, out, errOut)
		return out + errOut, code
	}
	out, code := preflightOut("operator up")
	if code != 0 || !strings.Contains(out, `admission webhook "validator.pytorchjob.training-operator.kubeflow.org" answers`) {
		t.Fatalf("with the operator up the preflight must pass and say its webhook answers: exit %d", code)
	}
	// train's gate runs the whole preflight (probes included) and caches its PASS for 5 minutes.
	if o, e, code := c.ain(t, "train", "qlora", "--name", "gate-up", "--no-wait"); code != 0 || !strings.Contains(o+e, "preflight: ") {
		t.Fatalf("train with the operator up: exit %d\n%s\n%s", code, o, e)
	}
	t0 := time.Now()
	start := sandboxtest.Stop(t, c.sb.Dir, "training-operator")
	t.Logf("training-operator stopped in %s", time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	out, code = preflightOut("operator down")
	t.Logf("the preflight took %s with the operator down", time.Since(t1).Round(time.Millisecond))
	if code != 4 {
		t.Errorf("exit %d, want 4 (a preflight check failed)", code)
	}
	for _, want := range []string{"FAIL", "operator", `cannot call the admission webhook "validator.pytorchjob.training-operator.kubeflow.org"`, "connection refused", "every PyTorchJob ain submits is refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("the preflight output lacks %q", want)
		}
	}
	// The cached PASS of the gate does not hide the stopped operator: its checks run again, the
	// gate FAILs (exit 4) and nothing is submitted.
	o, e, code := c.ain(t, "train", "qlora", "--name", "gate-down", "--no-wait")
	t.Logf("train with the operator down: exit %d\n%s\n%s", code, o, e)
	if code != 4 || !strings.Contains(o+e, "the job controllers checked now, the rest cached from the run at ") || !strings.Contains(o+e, `cannot call the admission webhook "validator.pytorchjob.training-operator.kubeflow.org"`) {
		t.Errorf("train's gate reused a cached PASS with the operator down: exit %d, want 4 and the webhook named", code)
	}
	if l, err := c.sb.Dynamic(t).Resource(jobs.PyTorchJobGVR).Namespace(c.ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != 1 || l.Items[0].GetName() != "gate-up" {
		t.Errorf("the preflight's dry run and the failed gate must store nothing (only gate-up): %v %v", err, l)
	}
	start()
	took, ok := sandboxtest.Poll(60*time.Second, 2*time.Second, func() bool {
		out, code = preflightOut("operator started again")
		return code == 0
	})
	if !ok {
		t.Fatalf("the preflight still fails 60 s after the operator was started again:\n%s", out)
	}
	t.Logf("the preflight passed again %s after the restart", took.Round(time.Second))
}
