package jobs

import (
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
)

func TestWorkerGate(t *testing.T) {
	job := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob)
	l := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec
	w := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec
	if len(l.InitContainers) != 1 || l.InitContainers[0].Name != GateContainer {
		t.Fatalf("launcher init containers %+v", l.InitContainers)
	}
	g := l.InitContainers[0]
	if g.Image != l.Containers[0].Image || g.VolumeMounts[0].Name != "mpi-job-config" || g.VolumeMounts[0].MountPath != "/etc/mpi" {
		t.Errorf("gate %+v", g)
	}
	if !strings.Contains(g.Command[2], "/etc/mpi/hostfile") || !strings.Contains(g.Command[2], GateLogPrefix) || g.Env[0].Name != GateTimeoutEnv {
		t.Errorf("gate script/env %q %+v", g.Command, g.Env)
	}
	if p := w.Containers[0].ReadinessProbe; p == nil || p.Exec == nil {
		t.Errorf("worker readiness probe %+v", p)
	}
	// The lesson: spec.workerGate false renders neither.
	job = render(t, "allreduce", "ib", "workerGate=false").Objects[0].(*kubeflowv1.MPIJob)
	l = job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec
	w = job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec
	if len(l.InitContainers) != 0 || w.Containers[0].ReadinessProbe != nil {
		t.Errorf("gate off: init %+v probe %+v", l.InitContainers, w.Containers[0].ReadinessProbe)
	}
}
