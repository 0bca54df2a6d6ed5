package kube

import "k8s.io/apimachinery/pkg/labels"

// Labels and annotations ain puts on what it creates, so later commands (status, logs, delete,
// prune) find their own objects and nothing else.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByAin   = "ain"
	// LabelRecipe names the recipe an object was rendered from.
	LabelRecipe = "ain.dev/recipe"
	// LabelRun names the run (job or serving deployment) an object belongs to: the unit that
	// Prune and delete work on.
	LabelRun = "ain.dev/run"
	// LabelKind is the recipe's kind (Training, MPI, Serving...).
	LabelKind = "ain.dev/kind"
	// AnnotationFabric records the fabric profile a workload was rendered for.
	AnnotationFabric = "ain.dev/fabric"
)

// FieldManager is ain's server-side apply field manager: the owner of every field ain sets.
const FieldManager = "ain"

// RunLabels are the labels that select every object of one run ain created.
func RunLabels(run string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByAin, LabelRun: run}
}

// RunSelector is RunLabels as a label selector string.
func RunSelector(run string) string {
	return labels.Set(RunLabels(run)).String()
}
