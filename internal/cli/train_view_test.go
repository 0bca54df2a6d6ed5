package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// A rank whose pod vanishes mid-run is said, and so is the pod that takes its place; pods that
// go once the job has ended (its clean-pod policy) are not.
func TestJobViewSaysReplacedRanks(t *testing.T) {
	var errb bytes.Buffer
	a := &App{Streams: Streams{Out: &bytes.Buffer{}, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" }}
	v := newJobView(a, time.Now())
	defer v.stop()
	pod := func(name string, index int) jobs.PodInfo {
		return jobs.PodInfo{Name: name, Replica: "worker", Index: index, Phase: "Running", Node: "gpu-node-1"}
	}
	snap := func(phase string, pods ...jobs.PodInfo) jobs.Snapshot {
		return jobs.Snapshot{Kind: "PyTorchJob", Namespace: "ns", Name: "qlora", Phase: phase, Pods: pods}
	}
	v.update(snap("Running", pod("qlora-worker-0", 0), pod("qlora-worker-1", 1)))
	v.update(snap("Running", pod("qlora-worker-0", 0)))
	v.update(snap("Running", pod("qlora-worker-0", 0), pod("qlora-worker-1-b", 1)))
	v.update(snap("Succeeded"))
	out := errb.String()
	for _, want := range []string{
		"qlora-worker-1 (worker-1) left the job: deleted or evicted",
		"qlora-worker-1-b replaces qlora-worker-1 as worker-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "qlora-worker-0 (worker-0) left") || strings.Count(out, "left the job") != 1 {
		t.Errorf("pods that went when the job ended are reported as leaving:\n%s", out)
	}
}
