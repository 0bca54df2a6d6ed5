package bench

import (
	"fmt"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PinWorkers requires the MPIJob's worker pods to run on nodes (required node affinity on the
// node's name), so that every variant of a bench measures the same nodes as the first one.
func PinWorkers(obj runtime.Object, nodes []string) error {
	job, ok := obj.(*kubeflowv1.MPIJob)
	if !ok {
		return fmt.Errorf("pinning workers: %T is not an MPIJob", obj)
	}
	w := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]
	if w == nil || len(nodes) == 0 {
		return nil
	}
	spec := &w.Template.Spec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: append([]string(nil), nodes...)}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms { // terms are ORed: the pin must hold in each
		terms[i].MatchFields = append(terms[i].MatchFields, req)
	}
	return nil
}
