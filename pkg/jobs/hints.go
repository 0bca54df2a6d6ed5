package jobs

import "github.com/ain-hpc/ain/pkg/next"

// Hint says how to run the job anyway: under another name, or after deleting the old one.
func (e *ImmutableError) Hint(cmd func(next.Command) string) string {
	return "run it under another name (--name " + e.Name + "-2), or remove the old one first: " + cmd(next.Command("delete "+e.Name).In(e.Namespace))
}

// Hint says where to look: the failed worker's log, then how to end the job.
func (e *StuckError) Hint(cmd func(next.Command) string) string {
	return "read the failed worker's log: `" + cmd(next.Command("logs "+e.Name+" --replica worker").In(e.Namespace)) +
		"`; then end the job: `" + cmd(next.Command("delete "+e.Name).In(e.Namespace)) + "`"
}

// Hint names the check of the job controllers and the pods' logs.
func (e *ControllerStalledError) Hint(cmd func(next.Command) string) string {
	return "`" + cmd("preflight") + "` checks the job controllers; `" + cmd(next.Command("logs "+e.Name).In(e.Namespace)) + "` shows what the pods did"
}

// Hint is Fix, as a next.Hinter.
func (e *NoAPIError) Hint(func(next.Command) string) string { return e.Fix() }

// Hint is Fix, as a next.Hinter.
func (e *NotServedError) Hint(func(next.Command) string) string { return e.Fix() }
