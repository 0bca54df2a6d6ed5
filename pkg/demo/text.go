package demo

import (
	"fmt"
	"io"
	"time"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/textout"
)

// WriteText writes what e says as the demo shows it on its log stream.
func (e Event) WriteText(w io.Writer) {
	switch e.Kind {
	case Started:
		fmt.Fprintf(w, "ain demo: the AIN2027 course flow on a local sandbox.\n"+
			"SIMULATED: the Kubernetes control plane, scheduler and job controllers (mpi-operator, JobSet, Trainer) are real; the GPU/RDMA nodes,\n"+
			"NCCL's output and figures (from the simulated fabric) and the model server (%s) are simulated. The nccl-tests and training\n"+
			"images' pods run their programs for real where this machine can (sshd, Open MPI, torchrun); the last step says which did.\n"+
			"sandbox state: %s   results: %s\n\n", e.Text, e.StateDir, e.Out)
	case Building:
		if e.BlankBefore {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "⧗ %s\n", e.Text)
	case StepStart:
		fmt.Fprintf(w, "\n━━ %s\n$ %s\n", e.Step.Title, e.Step.Command)
	case StepEnd:
		if e.Step.Err != nil {
			fmt.Fprintf(w, "%v\n", e.Step.Err)
			return
		}
		fmt.Fprintf(w, "→ exit %d in %s\n", e.Step.Code, e.Step.Took.Round(100*time.Millisecond))
	case Warning:
		fmt.Fprintln(w, e.Text)
	}
}

// WriteSummary writes the demo's closing table: each step's result (code gives a step's exit
// code: the caller knows what an error's is), its time and command, then what passed and where
// the results are; with keep, how to stop the sandbox left running (cmd words the command).
func (r *Result) WriteSummary(w io.Writer, code func(StepResult) int, keep bool, cmd func(next.Command) string) {
	fmt.Fprintf(w, "\n━━ summary (%s, simulated nodes and fabric)\n", r.Took.Round(time.Second))
	rows := [][]string{}
	for _, s := range r.Steps {
		status := "PASS"
		if c := code(s); c != 0 {
			status = fmt.Sprintf("FAIL (exit %d)", c)
		}
		rows = append(rows, []string{status, s.Took.Round(100 * time.Millisecond).String(), s.Title, s.Command})
	}
	textout.Table(w, false, []string{"RESULT", "TIME", "STEP", "COMMAND"}, rows)
	fmt.Fprintf(w, "%d/%d steps passed; results and plots in %s\n", len(r.Steps)-r.Failed(), len(r.Steps), r.Out)
	if keep {
		fmt.Fprintf(w, "the sandbox is still running: %s\n", cmd(next.Command("sandbox down --state-dir "+r.StateDir)))
	}
}
