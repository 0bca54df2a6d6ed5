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
