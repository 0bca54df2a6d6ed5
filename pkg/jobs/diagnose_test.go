package jobs

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/mpilauncher"
)

func diagPod(name, role, node string, containers ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node}}
	if role != "" {
		p.Labels[mpiv2beta1.JobRoleLabel] = role
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

// logReads are the pod logs the flow opened: "pod/container:tail".
func logReads(kc *fake.Clientset) []string {
	var out []string
	for _, a := range kc.Actions() {
		if a.GetSubresource() != "log" {
			continue
		}
		o := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		tail := "all"
		if o.TailLines != nil {
			tail = "50"
		}
		out = append(out, o.Container+":"+tail)
	}
	return out
}

func TestNodesAndNameArg(t *testing.T) {
	pods := []corev1.Pod{diagPod("a", "", "n2"), diagPod("b", "", ""), diagPod("c", "", "n1"), diagPod("d", "", "n2")}
	if got := strings.Join(Nodes(pods), ","); got != "n2,n1" {
		t.Errorf("Nodes = %q, want n2,n1 (each once, in the pods' order, unbound pods left out)", got)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("saved", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file of that name is the file; a valid name with no such file is a job.
	for args, want := range map[string]bool{"qlora": true, "saved": false, "-": false, "Not_A_Name": false, "a b": false} {
		if _, ok := NameArg(strings.Fields(args)); ok != want {
			t.Errorf("NameArg(%q) = %v, want %v", args, ok, want)
		}
	}
}

// Every rank's log is read from its main container (or its only one) into one verdict.
func TestNCCLLogs(t *testing.T) {
	kc := fake.NewClientset()
	c := &Cluster{Kube: kc, Namespace: "team"}
	pods := []corev1.Pod{diagPod("w-0", "worker", "n1", MPIContainer, "sidecar"), diagPod("w-1", "worker", "n2", "other")}
	r, err := c.NCCLLogs(context.Background(), "MPIJob", pods, func(pod string, err error) { t.Errorf("%s skipped: %v", pod, err) })
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != 2 {
		t.Errorf("%d lines read, want one per pod (the fake's log is one line)", r.Lines)
	}
	if got := strings.Join(logReads(kc), ","); got != "mpi:all,:all" {
		t.Errorf("logs read %q, want the mpi container's, then the only container's", got)
	}
}

func TestLauncherReport(t *testing.T) {
	ctx := context.Background()
	workers := []corev1.Pod{diagPod("j-worker-0", "worker", "n1", MPIContainer)}
	c := &Cluster{Kube: fake.NewClientset(), Namespace: "team"}
	_, err := c.LauncherReport(ctx, "MPIJob", "j", workers, "FIX")
	var nl *NoLauncherError
	if !errors.As(err, &nl) || !nl.Pending() || !strings.Contains(err.Error(), "MPIJob j has no launcher pod (yet)") {
		t.Errorf("MPIJob without launcher: %v", err)
	}
	if _, err = c.LauncherReport(ctx, "PyTorchJob", "j", workers, "FIX"); !errors.As(err, &nl) || nl.Pending() || err.Error() != "j is a PyTorchJob without a launcher pod" {
		t.Errorf("PyTorchJob: %v", err)
	}

	launcher := diagPod("j-launcher", "launcher", "n1", MPIContainer)
	kc := fake.NewClientset()
	c.Kube = kc
	if r, err := c.LauncherReport(ctx, "MPIJob", "j", append(workers, launcher), "FIX"); err != nil || r == nil || r.Fix == "FIX" {
		t.Errorf("launcher: report %+v, err %v; want the launcher log's verdict", r, err)
	}
	if got := strings.Join(logReads(kc), ","); got != "mpi:all" {
		t.Errorf("logs read %q, want the launcher's mpi container, whole", got)
	}

	// The worker gate gave up: its own log (the last lines) is the evidence, the fix the caller's.
	launcher.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: GateContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	kc = fake.NewClientset()
	c.Kube = kc
	r, err := c.LauncherReport(ctx, "MPIJob", "j", append(workers, launcher), "FIX")
	if err != nil || r.Verdict != mpilauncher.VerdictLauncherBeforeWorkers || r.Fix != "FIX" {
		t.Errorf("gate failed: report %+v, err %v", r, err)
	}
	if got := strings.Join(logReads(kc), ","); got != GateContainer+":50" {
		t.Errorf("logs read %q, want the gate's last lines", got)
	}
}
