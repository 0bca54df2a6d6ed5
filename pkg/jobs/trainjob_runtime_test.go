package jobs

import (
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// trainingRuntime renders r on the Trainer (ib profile) and returns its TrainingRuntime.
func trainingRuntime(t *testing.T, name string, sets ...string) *trainer.TrainingRuntime {
	t.Helper()
	b := buildOn(t, APITrainer, loadRecipe(t, name, sets...), nil)
	rt, ok := b.Objects[0].(*trainer.TrainingRuntime)
	if !ok {
		t.Fatalf("%s: first object is %T", name, b.Objects[0])
	}
	return rt
}

// Issue 27 item 10: runPolicy.ttlSecondsAfterFinished reaches the JobSet the Trainer builds
// (through the runtime's template: a TrainJob has no TTL field), for torch and MPI recipes.
func TestTrainJobTTL(t *testing.T) {
	for _, name := range []string{"qlora", "allreduce"} {
		ttl := trainingRuntime(t, name, "runPolicy.ttlSecondsAfterFinished=600").Spec.Template.Spec.TTLSecondsAfterFinished
		if ttl == nil || *ttl != 600 {
			t.Errorf("%s: JobSet template ttlSecondsAfterFinished %v, want 600", name, ttl)
		}
		if ttl := trainingRuntime(t, name).Spec.Template.Spec.TTLSecondsAfterFinished; ttl != nil {
			t.Errorf("%s: no TTL in the recipe, JobSet template has %d", name, *ttl)
		}
	}
}

// Issue 27 item 13: the MPI TrainJob's launcher opts out of the node's GPUs as the kubeflow MPI
// operators' launchers do (NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES empty, last so
// that they win over the recipe's env); the workers, which hold the GPUs, do not.
func TestTrainJobLauncherGPUOptOut(t *testing.T) {
	rt := trainingRuntime(t, "allreduce", "env.NVIDIA_VISIBLE_DEVICES=all")
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		env := rj.Template.Spec.Template.Spec.Containers[0].Env
		last := map[string]string{}
		seen := map[string]bool{}
		for _, e := range env {
			last[e.Name], seen[e.Name] = e.Value, true
		}
		for _, n := range []string{"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"} {
			switch rj.Name {
			case TrainerLauncherJob:
				if v, ok := last[n]; !ok || v != "" {
					t.Errorf("launcher: %s is %q (set: %v), want it empty", n, v, ok)
				}
			case TrainerNodeJob:
				if n == "NVIDIA_DRIVER_CAPABILITIES" && seen[n] || n == "NVIDIA_VISIBLE_DEVICES" && last[n] != "all" {
					t.Errorf("node: %s = %q: the workers keep the recipe's env", n, last[n])
				}
			}
		}
	}
}
