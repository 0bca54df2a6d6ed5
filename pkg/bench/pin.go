package bench

import (
	"fmt"

	mpiv2beta1 "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/image"
	"github.com/ain-hpc/ain/pkg/jobs"
)

// PinWorkers requires the ranks' pods of a rendered bundle (the MPI workers of a kubeflow.org/v1
// or v2beta1 MPIJob, the master and workers of a PyTorchJob, or the "node" pods of a TrainJob's
// TrainingRuntime) to run on nodes: every variant of a bench measures the same nodes as the
// first one, and a training job runs on the nodes a bench validated. A node field selector takes one
// value per term, so each node gets its own (ORed) term: metadata.name In [node], ANDed with
// whatever each existing term already requires.
func PinWorkers(objs []runtime.Object, nodes []string) error {
	if len(nodes) == 0 {
		return nil
	}
	for _, obj := range objs {
		var spec *corev1.PodSpec
		switch job := obj.(type) {
		case *kubeflowv1.MPIJob:
			if w := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]; w != nil {
				spec = &w.Template.Spec
			}
		case *mpiv2beta1.MPIJob:
			if w := job.Spec.MPIReplicaSpecs[mpiv2beta1.MPIReplicaTypeWorker]; w != nil {
				spec = &w.Template.Spec
			}
		case *kubeflowv1.PyTorchJob:
			// Every rank of a training job: the master is rank 0.
			for _, t := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
				if r := job.Spec.PyTorchReplicaSpecs[t]; r != nil {
					pin(&r.Template.Spec, nodes)
					spec = &r.Template.Spec
				}
			}
			if spec != nil {
				return nil
			}
		case *trainer.TrainingRuntime:
			for i, rj := range job.Spec.Template.Spec.ReplicatedJobs {
				if rj.Name == jobs.TrainerNodeJob {
					spec = &job.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
				}
			}
		}
		if spec != nil {
			pin(spec, nodes)
			return nil
		}
	}
	return fmt.Errorf("pinning workers: no rank pod template among the %d rendered object(s)", len(objs))
}

func pin(spec *corev1.PodSpec, nodes []string) {
	sel := image.RequiredNodeSelector(spec)
	var terms []corev1.NodeSelectorTerm
	for _, t := range sel.NodeSelectorTerms {
		for _, n := range nodes {
			nt := *t.DeepCopy()
			nt.MatchFields = append(nt.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}})
			terms = append(terms, nt)
		}
	}
	sel.NodeSelectorTerms = terms
}
