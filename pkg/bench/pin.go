package bench

import (
	"fmt"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PinWorkers requires the MPIJob's worker pods to run on nodes, so that every variant of a bench
// measures the same nodes as the first one. A node field selector takes one value per term, so
// each node gets its own (ORed) term: metadata.name In [node], ANDed with whatever each existing
// term already requires.
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
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	old := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(old) == 0 {
		old = []corev1.NodeSelectorTerm{{}}
	}
	var terms []corev1.NodeSelectorTerm
	for _, t := range old {
		for _, n := range nodes {
			nt := *t.DeepCopy()
			nt.MatchFields = append(nt.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}})
			terms = append(terms, nt)
		}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
	return nil
}
