package jobs

import "github.com/ain-hpc/ain/pkg/kube"

// ain's labels, field manager and encoding are pkg/kube's; these names keep the builders and
// their callers reading as before.
const (
	LabelManagedBy   = kube.LabelManagedBy
	ManagedByAin     = kube.ManagedByAin
	LabelRecipe      = kube.LabelRecipe
	LabelRun         = kube.LabelRun
	LabelKind        = kube.LabelKind
	AnnotationFabric = kube.AnnotationFabric
	FieldManager     = kube.FieldManager
)

// Encode is kube.Encode (YAML documents or a JSON List, keys sorted).
var Encode = kube.Encode

// ToUnstructured is kube.ToUnstructured.
var ToUnstructured = kube.ToUnstructured
