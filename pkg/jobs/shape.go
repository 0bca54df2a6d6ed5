package jobs

import (
	"fmt"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Shape returns the number of GPU pods and GPUs a job asks for (through its backend).
func Shape(u *unstructured.Unstructured) (nodes int, gpus int64) {
	if b, err := BackendOf(u); err == nil {
		return b.Shape(u)
	}
	return replicaShape(u)
}

// replicaShape reads the kubeflow operators' replica specs (v1 and v2beta1 alike).
func replicaShape(u *unstructured.Unstructured) (nodes int, gpus int64) {
	key := "pytorchReplicaSpecs"
	if u.GetKind() == kubeflowv1.MPIJobKind {
		key = "mpiReplicaSpecs"
	}
	specs, _, _ := unstructured.NestedMap(u.Object, "spec", key)
	for rt, raw := range specs {
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		n, _, _ := unstructured.NestedInt64(m, "replicas")
		if n == 0 {
			n = 1
		}
		cs, _, _ := unstructured.NestedSlice(m, "template", "spec", "containers")
		var g int64
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			lim, _, _ := unstructured.NestedStringMap(cm, "resources", "limits")
			for k, v := range lim {
				if strings.HasSuffix(k, "/gpu") {
					var x int64
					fmt.Sscan(v, &x)
					g += x
				}
			}
		}
		if rt == "Launcher" && g == 0 {
			continue
		}
		nodes += int(n)
		gpus += n * g
	}
	return nodes, gpus
}
