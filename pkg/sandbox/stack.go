package sandbox

import (
	"fmt"
	"strings"
)

// Stack is the set of job controllers a sandbox runs. A cluster serves one owner of
// mpijobs.kubeflow.org: the training-operator's v1 MPIJob CRD and the mpi-operator's v2beta1 one
// share that name, so a sandbox runs one stack, chosen at `ain sandbox up` and kept in its state.
type Stack string

const (
	// StackCurrent is what Kubeflow clusters run today: the standalone mpi-operator
	// (kubeflow.org/v2beta1 MPIJob), JobSet, and Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1
	// TrainJob, TrainingRuntime, ClusterTrainingRuntime), each with the admission webhooks it serves.
	// Trainer needs JobSet (a TrainJob runs as a JobSet) but not the mpi-operator: its MPI
	// runtimes are its own plugin (v2.3.0 pkg/runtime/framework/plugins/mpi builds the launcher
	// and node Jobs, the SSH key Secret and the hostfile ConfigMap itself). The mpi-operator serves
	// only kubeflow.org/v2beta1 MPIJob, which ain's MPI recipes also run as.
	StackCurrent Stack = "current"
	// StackLegacy is the training-operator v1.8.1 (kubeflow.org/v1 PyTorchJob and MPIJob).
	StackLegacy Stack = "legacy"
	// DefaultStack is what `ain sandbox up` and `ain demo` run unless told otherwise.
	DefaultStack = StackCurrent
)

// Stacks lists the stacks, the default first.
func Stacks() []Stack { return []Stack{StackCurrent, StackLegacy} }

// ParseStack reads a stack name ("" is the default).
func ParseStack(s string) (Stack, error) {
	if s == "" {
		return DefaultStack, nil
	}
	for _, st := range Stacks() {
		if Stack(strings.ToLower(s)) == st {
			return st, nil
		}
	}
	return "", fmt.Errorf("--stack must be one of %s, got %q", stackNames(), s)
}

func stackNames() string {
	var n []string
	for _, s := range Stacks() {
		n = append(n, string(s))
	}
	return strings.Join(n, ", ")
}

// Controllers names the job controllers the stack runs (component and process names).
func (s Stack) Controllers() []string {
	if s == StackLegacy {
		return []string{"training-operator"}
	}
	return []string{"mpi-operator", "jobset", "trainer"}
}

// Components lists the cached builds the stack needs, cheapest first.
func (s Stack) Components() []Component {
	// CoreDNS serves the real pods' names (real pods are the default; Up skips it where they
	// cannot run, see upComponents).
	want := map[string]bool{"etcd": true, "kwok": true, "kubernetes": true, "coredns": true}
	for _, c := range s.Controllers() {
		want[c] = true
	}
	var out []Component
	for _, c := range Components() {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// APIs lists the group/version/kind of the jobs the stack's controllers serve.
func (s Stack) APIs() []string {
	if s == StackLegacy {
		return []string{"kubeflow.org/v1 PyTorchJob", "kubeflow.org/v1 MPIJob"}
	}
	return []string{"kubeflow.org/v2beta1 MPIJob", "jobset.x-k8s.io/v1alpha2 JobSet", "trainer.kubeflow.org/v1alpha1 TrainJob"}
}
