package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/bench"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
)

// The Runner's typed errors map to the exit codes and hints `ain bench allreduce --help` documents.
func TestBenchRunError(t *testing.T) {
	a := &App{}
	kc := &kube.Clients{Namespace: "ns"}
	o := &benchAllreduceOptions{Timeout: 5 * time.Minute}
	for _, c := range []struct {
		err  error
		code ainerr.Code
		msg  string
		hint string
	}{
		{bench.ErrInterrupted, ainerr.Cancelled, "interrupted", ""},
		{&bench.TimeoutError{Variant: "tree"}, ainerr.Timeout, "--timeout 5m0s reached during variant tree", "raise --timeout"},
		{&bench.VariantFailedError{Variant: "ring", Kind: "MPIJob", Job: "j", Log: "/out/ring.log"}, ainerr.JobFailed, "variant ring: MPIJob j failed", "its launcher output is in /out/ring.log"},
		{&bench.BuildError{Err: errors.New("bad")}, ainerr.Usage, "bad", ""},
		{&bench.JobExistsError{Kind: "MPIJob", Namespace: "ns", Name: "j"}, ainerr.Usage, "MPIJob ns/j already exists", "ain delete j"},
		{&jobs.DeletedError{Kind: "MPIJob", Namespace: "ns", Name: "j"}, ainerr.JobFailed, "MPIJob ns/j was deleted before it finished", ""},
		{&bench.ApplyError{Err: context.Canceled}, ainerr.Cancelled, "interrupted before the job was applied", ""},
		{fmt.Errorf("pin: %w", errors.New("x")), ainerr.Failure, "pin: x", ""},
		// As a run returns it: the watch's ClusterError around the StuckError, which alone is said.
		{&bench.ClusterError{Doing: "watching the job", Err: &jobs.StuckError{Kind: "MPIJob", Namespace: "ns", Name: "j", Why: "worker-0 failed"}},
			ainerr.JobFailed, "MPIJob ns/j can never start: worker-0 failed", "run the bench again"},
	} {
		err := a.benchRunError(kc, c.err, o)
		if _, wrapped := c.err.(*bench.ClusterError); wrapped && strings.HasPrefix(err.Error(), "watching") {
			t.Errorf("the stuck worker's error keeps the watch's prefix: %q", err)
		}
		if ainerr.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) || !strings.Contains(ainerr.HintOf(err), c.hint) {
			t.Errorf("%T: exit %d %q hint %q; want exit %d %q hint ~%q", c.err, ainerr.CodeOf(err), err, ainerr.HintOf(err), c.code, c.msg, c.hint)
		}
	}
	if a.benchRunError(kc, nil, o) != nil {
		t.Error("nil error mapped to an error")
	}
}
