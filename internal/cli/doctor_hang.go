package cli

import (
	"context"
	"errors"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/hang"
	"github.com/ain-hpc/ain/pkg/input"
)

func (a *App) doctorHangCommand() *ucli.Command {
	return a.fileDoctor("hang", "which ranks did not enter the collective the others wait in (NCCL RAS output or PyTorch Flight Recorder dumps)",
		"FILE... (the output of `ncclras` [-f json], one or more queries in time order; or one Flight Recorder dump per rank,\n"+
			"named <prefix><rank> as TORCH_NCCL_DEBUG_INFO_TEMP_FILE writes them, or the directory holding them; - for stdin)",
		"Names the collective the furthest ranks wait in (RAS: the operation count; Flight Recorder: the sequence\n"+
			"number in its process group), the ranks that did not enter it (stuckRanks: look at these), the ranks waiting\n"+
			"in it (aheadRanks) and the ranks no data came from (missingRanks). Status is RAS's word: OK, MISMATCH,\n"+
			"INCOMPLETE, DEAD, ERROR; Flight Recorder dumps where every rank is inside the collective give IN_COLLECTIVE.\n"+
			"Several ncclras queries of a MISMATCH tell a hang (counts do not move) from a busy job (they do).\n"+
			"Get RAS output on a node of the job with `ncclras` (NCCL >= 2.24, port 28028) and Flight Recorder dumps with\n"+
			"TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 (PyTorch >= 2.5).",
		a.runDoctorHang, nil)
}

func (a *App) runDoctorHang(ctx context.Context, o *doctorOptions) error {
	if err := o.validate(1, 0, "the ncclras output or the Flight Recorder dumps"); err != nil {
		return err
	}
	files, err := input.ExpandDirs(o.Files)
	var empty *input.EmptyDirError
	switch {
	case errors.As(err, &empty):
		return ainerr.Usagef("%v: give the ncclras output or the Flight Recorder dumps", err)
	case err != nil:
		return ainerr.New(ainerr.Failure, err, "")
	}
	ins := make([]hang.Input, 0, len(files))
	for _, name := range files {
		in, err := parseInput(ctx, a, name, func(r io.Reader) (hang.Input, error) { return hang.ReadInput(name, r) })
		if err != nil {
			return err
		}
		ins = append(ins, in)
	}
	r, err := hang.Analyze(ins)
	if err != nil {
		return ainerr.New(ainerr.Usage, err, "")
	}
	return a.verdict(o.Output, r, func() error { r.WriteText(a.Streams.Out, withNext); return nil }, r.OK())
}
