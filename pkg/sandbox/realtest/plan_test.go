package realtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/sandbox"
)

// TestIntegrationRealBenchPrintsTheTable: a real MPIJob's all_reduce_perf stand-in prints, after
// its real MPI_Allreduce, the nccl-tests table the sandbox rendered from its simulated fabric
// (the scenario's sample for the render's NCCL_IB_DISABLE=1: the socket run, which the base
// rules pick before NCCL_ALGO's), so ain's parser reads a whole run from a launcher whose ranks
// really ran. Fails with real mode off (no rank lines) and without the plan (no table).
func TestIntegrationRealBenchPrintsTheTable(t *testing.T) {
	sb := NeedReal(t)
	ns := sb.Namespace(t)
	b, objs := renderMPIJob(t, ns, "table", nil, "nccl.env.NCCL_ALGO=Ring")
	c, snap, err := RunJob(t, sb, ns, "table", b, objs, 180*time.Second)
	if err != nil || snap.Phase != "Succeeded" {
		t.Fatalf("MPIJob %s: %v\nagent:\n%s", snap.Phase, err, sb.ComponentLog("agent", 40))
	}
	log := launcherLog(t, c, b, "table")
	if !strings.Contains(log, "podrun-allreduce rank 1 of 2 on table-worker-1: sum 3") {
		t.Errorf("no real rank in the launcher's log:\n%s", log)
	}
	runs, err := nccl.ParsePerf(strings.NewReader(log))
	if err != nil || len(runs) != 1 {
		t.Fatalf("nccl-tests runs in the launcher's log: %d, %v\n%s", len(runs), err, log)
	}
	// Every row of the sample (8 B to 8 GiB: 31), none split by another rank's output.
	if n := len(runs[0].Rows); n != 31 || runs[0].NRanks == nil || *runs[0].NRanks != 2 || runs[0].AvgBusbw == nil {
		t.Errorf("the table: %d rows, nranks %v, avg busbw %v; want the sample's 31 rows over 2 ranks and its average", n, runs[0].NRanks, runs[0].AvgBusbw)
	}
	for _, want := range []string{"podrun-allreduce rank 0 of 2 on table-worker-0: sum 3", "NCCL INFO Using network Socket"} {
		if !strings.Contains(log, want) {
			t.Errorf("the launcher's log lacks %q:\n%s", want, log)
		}
	}
}

// TestIntegrationRealScenarioFailsTheRun: under job-fails, real pods follow the scenario: the MPI
// ranks do their real allreduce, then rank 0 prints the scenario's NCCL error and exits 1, so
// the real mpirun ends the launcher Failed with Open MPI's own message; a TrainJob's real torchrun
// ranks join their gloo group, then fail with the sample's NCCL error.
func TestIntegrationRealScenarioFailsTheRun(t *testing.T) {
	sb := NeedTorchrun(t)
	setScenario(t, sb.Dir, "job-fails")
	ns := sb.Namespace(t)

	b, objs := renderMPIJob(t, ns, "fails", nil)
	c, snap, err := RunJob(t, sb, ns, "fails", b, objs, 180*time.Second)
	if snap.Phase != "Failed" {
		t.Fatalf("MPIJob %s (%v), want Failed\nagent:\n%s", snap.Phase, err, sb.ComponentLog("agent", 40))
	}
	log := launcherLog(t, c, b, "fails")
	for _, want := range []string{
		"podrun-allreduce rank 0 of 2 on fails-worker-0: sum 3", // the real run
		"NCCL WARN NET/IB : Got completion from peer",           // the scenario's error
	} {
		if !strings.Contains(log, want) {
			t.Errorf("launcher log lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(log, "exited on signal") && !strings.Contains(log, "non-zero status") {
		t.Errorf("launcher log lacks mpirun's own report of the failed rank:\n%s", log)
	}

	tb, tobjs := RenderQLoRA(t, sb, jobs.APITrainer, ns, "tfails", nil)
	tc, tsnap, err := RunJob(t, sb, ns, "tfails", tb, tobjs, 240*time.Second)
	if tsnap.Phase != "Failed" {
		t.Fatalf("TrainJob %s (%v), want Failed\nagent:\n%s", tsnap.Phase, err, sb.ComponentLog("agent", 40))
	}
	for pod, l := range PodLogs(t, tc, tb, "tfails") {
		if !strings.Contains(l, "joined the gloo group") || !strings.Contains(l, "ncclRemoteError") {
			t.Errorf("%s: want a real rank that joined its group, then the scenario's NCCL error:\n%s", pod, l)
		}
	}
}

// setScenario switches the package's sandbox to name until the test ends.
func setScenario(t *testing.T, dir, name string) {
	t.Helper()
	if err := sandbox.SetScenario(context.Background(), dir, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sandbox.SetScenario(context.Background(), dir, "healthy"); err != nil {
			t.Error(err)
		}
	})
}
