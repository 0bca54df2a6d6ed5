package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/hang"
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
	files, err := expandDirs(o.Files)
	if err != nil {
		return err
	}
	ins := make([]hang.Input, 0, len(files))
	for _, name := range files {
		rc, err := a.openInput(ctx, name)
		if err != nil {
			return err
		}
		in, err := hang.ReadInput(name, rc)
		rc.Close()
		if err != nil {
			return inputError(ctx, name, ainerr.Failure, err)
		}
		if err := readInterrupted(ctx, name); err != nil {
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

// expandDirs replaces a directory argument by the regular files in it, sorted (the directory a
// job's Flight Recorder dumps were written to, as torchfrtrace takes it).
func expandDirs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if a == "-" || err != nil || !st.IsDir() {
			out = append(out, a) // openInput reports a missing file
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, ainerr.New(ainerr.Failure, fmt.Errorf("read directory %s: %w", a, err), "")
		}
		n := 0
		for _, e := range ents {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(a, e.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, ainerr.Usagef("directory %s holds no files: give the ncclras output or the Flight Recorder dumps", a)
		}
	}
	return out, nil
}
