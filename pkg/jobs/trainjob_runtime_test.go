package jobs

import (
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/profile"
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

// runPolicy.ttlSecondsAfterFinished reaches the JobSet the Trainer builds
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

// The MPI TrainJob's launcher opts out of the node's GPUs as the kubeflow MPI
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

// qlora-merge (one pod, no GPU) on a profile that selects and tolerates GPU
// nodes: no nodeSelector (it picks GPU nodes), no NCCL env (no NCCL without a GPU), the
// tolerations kept (they allow a node, never require one: as for the MPI launcher); qlora's
// ranks keep all three. On every API that runs a training recipe.
func TestCPUJobNoGPUPlacement(t *testing.T) {
	gpuNodes := func(p *profile.Profile) {
		p.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
		p.Spec.Tolerations = []profile.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	}
	for _, api := range []API{APITrainer, APITrainingOperator} {
		for _, name := range []string{"qlora-merge", "qlora"} {
			gpu := name == "qlora"
			for _, pod := range podSpecs(t, buildOn(t, api, loadRecipe(t, name), gpuNodes)) {
				if got := len(pod.NodeSelector) > 0; got != gpu {
					t.Errorf("%s %s: nodeSelector %v", api, name, pod.NodeSelector)
				}
				if len(pod.Tolerations) != 1 {
					t.Errorf("%s %s: tolerations %v, want the profile's", api, name, pod.Tolerations)
				}
				ncclEnv := false
				for _, e := range pod.Containers[0].Env {
					ncclEnv = ncclEnv || strings.HasPrefix(e.Name, "NCCL_")
				}
				if ncclEnv != gpu {
					t.Errorf("%s %s: NCCL env %v, want %v", api, name, pod.Containers[0].Env, gpu)
				}
			}
		}
	}
}

// podSpecs are the pod specs of a PyTorchJob's replicas or a TrainingRuntime's replicated jobs.
func podSpecs(t *testing.T, b *Bundle) []corev1.PodSpec {
	t.Helper()
	var out []corev1.PodSpec
	switch j := b.Objects[0].(type) {
	case *kubeflowv1.PyTorchJob:
		for _, s := range j.Spec.PyTorchReplicaSpecs {
			out = append(out, s.Template.Spec)
		}
	case *trainer.TrainingRuntime:
		for _, rj := range j.Spec.Template.Spec.ReplicatedJobs {
			out = append(out, rj.Template.Spec.Template.Spec)
		}
	default:
		t.Fatalf("first object %T", j)
	}
	return out
}

// With gang scheduling on, a torch TrainJob's runtime asks the Trainer for a
// PodGroup of the served gang scheduler (Volcano, with its schedulerName; coscheduling, with the
// scheduleTimeoutSeconds the Trainer dereferences); an MPI TrainJob gets none (the launcher
// would be counted and created only after the workers are Ready), nor does Kueue alone.
func TestTrainJobPodGroupPolicy(t *testing.T) {
	const volcano, cosched = "Volcano", "scheduler-plugins coscheduling"
	cases := []struct {
		recipe string
		gang   bool
		gangs  []string
		want   string // "volcano", "coscheduling" or ""
	}{
		{"qlora", true, []string{cosched, volcano}, "volcano"},
		{"qlora", true, []string{"Kueue", cosched}, "coscheduling"},
		{"qlora", true, []string{"Kueue"}, ""},
		{"qlora", false, []string{volcano}, ""},
		{"allreduce", true, []string{volcano, cosched}, ""},
	}
	for _, c := range cases {
		b, err := trainJob.Build(loadRecipe(t, c.recipe), profile.Default(), Options{GangScheduling: c.gang, GangSchedulers: c.gangs})
		if err != nil {
			t.Fatal(err)
		}
		rt := b.Objects[0].(*trainer.TrainingRuntime)
		pg, got := rt.Spec.PodGroupPolicy, ""
		switch {
		case pg != nil && pg.Volcano != nil:
			got = "volcano"
		case pg != nil && pg.Coscheduling != nil:
			got = "coscheduling"
			if s := pg.Coscheduling.ScheduleTimeoutSeconds; s == nil || *s != 60 {
				t.Errorf("%s %v: scheduleTimeoutSeconds %v, want 60", c.recipe, c.gangs, s)
			}
		}
		if got != c.want {
			t.Errorf("%s gang=%v %v: podGroupPolicy %q, want %q", c.recipe, c.gang, c.gangs, got, c.want)
		}
		for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
			if sn := rj.Template.Spec.Template.Spec.SchedulerName; (sn == "volcano") != (c.want == "volcano") || sn != "" && sn != "volcano" {
				t.Errorf("%s %v: %s schedulerName %q", c.recipe, c.gangs, rj.Name, sn)
			}
		}
	}
	if n := GangAssumption(APITrainer, loadRecipe(t, "allreduce"), []string{volcano}); !strings.Contains(n, "no podGroupPolicy") {
		t.Errorf("MPI TrainJob gang note: %q", n)
	}
	if n := GangAssumption(APITrainer, loadRecipe(t, "qlora"), []string{cosched}); !strings.Contains(n, "minMember = 3") || !strings.Contains(n, "default scheduler") {
		t.Errorf("torch TrainJob gang note: %q", n)
	}
}
