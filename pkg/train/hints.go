package train

import "github.com/ain-hpc/ain/pkg/next"

// Hint says what to do about nodes the job cannot run on: nothing was applied.
func (e *PinnedNodesError) Hint(cmd func(next.Command) string) string {
	return "nothing was applied; bring the node back (kubectl uncordon NODE, or repair it), or validate nodes that are up with a new `" +
		cmd("bench allreduce --out DIR/NAME") + "` run, or drop --require-bench"
}

// Hint says the job keeps running, and how to follow or end it.
func (e *TimeoutError) Hint(cmd func(next.Command) string) string {
	return "the job keeps running: `" + cmd(next.Command("status "+e.Name).In(e.Namespace)) + "`, or end it: `" + cmd(next.Command("delete "+e.Name).In(e.Namespace)) + "`"
}

// Hint says where the evidence is: the bytes per HCA, or NCCL's log per rank.
func (e *TransportError) Hint(cmd func(next.Command) string) string {
	if len(e.Findings) > 0 {
		return "see the bytes per HCA above; `" + cmd("doctor counters --node NODE") + "` reads a node's counters"
	}
	return "see the evidence above; `" + cmd(next.Command("doctor nccl-log "+e.Name).In(e.Namespace)) + "` explains it per rank"
}
