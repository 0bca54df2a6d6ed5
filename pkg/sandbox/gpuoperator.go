package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUOperatorNamespace is where the GPU Operator runs its operands (its README installs with
// helm -n gpu-operator).
const GPUOperatorNamespace = "gpu-operator"

// gpuOperands are the GPU Operator's operand DaemonSets a GPU job depends on, as its manifests
// name them (NVIDIA/gpu-operator assets/state-driver, state-device-plugin and
// state-dcgm-exporter 0500/0800_daemonset.yaml: DaemonSet name = app label; each selects the
// nodes by its nvidia.com/gpu.deploy.* label, which simulatedNode sets). The sandbox's kube-
// controller-manager runs them as it runs any DaemonSet, one pod per GPU node, and kwok plays
// the pods (Running, Ready); their images are never pulled, hence the tag.
var gpuOperands = []struct{ name, deployLabel, image string }{
	{"nvidia-driver-daemonset", "nvidia.com/gpu.deploy.driver", "nvcr.io/nvidia/driver:simulated"},
	{"nvidia-device-plugin-daemonset", "nvidia.com/gpu.deploy.device-plugin", "nvcr.io/nvidia/k8s-device-plugin:simulated"},
	{"nvidia-dcgm-exporter", "nvidia.com/gpu.deploy.dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:simulated"},
}

// ensureGPUOperator creates the operator's namespace and its operand DaemonSets.
func (k *kube) ensureGPUOperator(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: GPUOperatorNamespace}}
	if _, err := k.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, o := range gpuOperands {
		labels := map[string]string{"app": o.name, LabelSimulated: "true"}
		if o.deployLabel == "nvidia.com/gpu.deploy.driver" {
			// as the operator labels its driver pods (assets/state-driver/0500_daemonset.yaml)
			labels["app.kubernetes.io/component"] = "nvidia-driver"
		}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: GPUOperatorNamespace, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": o.name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{o.deployLabel: "true"},
						Containers:   []corev1.Container{{Name: o.name, Image: o.image}},
					},
				},
			},
		}
		if _, err := k.cs.AppsV1().DaemonSets(GPUOperatorNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("GPU Operator DaemonSet %s: %w", o.name, err)
		}
	}
	return nil
}

// waitGPUOperator waits until every operand DaemonSet has a Ready pod on each node it selects.
func (k *kube) waitGPUOperator(ctx context.Context, timeout time.Duration) error {
	var waiting []string
	err := poll(ctx, timeout, func() (bool, error) {
		waiting = waiting[:0]
		for _, o := range gpuOperands {
			ds, err := k.cs.AppsV1().DaemonSets(GPUOperatorNamespace).Get(ctx, o.name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := ds.Status
			if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled == 0 || st.NumberReady < st.DesiredNumberScheduled {
				waiting = append(waiting, fmt.Sprintf("%s %d/%d ready", o.name, st.NumberReady, st.DesiredNumberScheduled))
			}
		}
		return len(waiting) == 0, nil
	})
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the GPU Operator's DaemonSets not ready after %s: %s", timeout, strings.Join(waiting, ", "))
	}
	return err
}
