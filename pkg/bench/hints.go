package bench

import "github.com/ain-hpc/ain/pkg/next"

// Hint says where the failed variant's launcher output is.
func (e *VariantFailedError) Hint(func(next.Command) string) string {
	return "its launcher output is in " + e.Log
}

// Hint says what was kept and how to fit the bench in its bound.
func (e *TimeoutError) Hint(func(next.Command) string) string {
	return "the partial results are saved; raise --timeout or run fewer variants"
}

// Hint says how to run the variant's job anyway.
func (e *JobExistsError) Hint(cmd func(next.Command) string) string {
	return "delete it first: " + cmd(next.Command("delete "+e.Name))
}

// Hint says how to name the nodes, or what checks them.
func (e *NoNodesError) Hint(cmd func(next.Command) string) string {
	return "name them with --nodes SERVER,CLIENT, or check `" + cmd("preflight") + "`"
}

// Hint says what the pods need: a GID of their own address, or the resource, the privilege
// and the image they ask for.
func (e *PerftestError) Hint(cmd func(next.Command) string) string {
	if len(e.Problems) > 0 { // a pod found no RoCE GID of its own address
		return "give --gid-index N to name the GID (" + cmd("doctor ib-ports") + " lists the GID tables), or attach the pods' RDMA network (the profile's networks)"
	}
	return "the pods request " + e.Resource + " and IPC_LOCK (Pod Security: privileged namespace) and run " + e.Image + " (--image for a mirror)"
}

// Hint says the pods are gone, and where to look when they never started.
func (e *RDMATimeoutError) Hint(func(next.Command) string) string {
	return "the perftest pods were deleted; `kubectl describe node` if they stayed Pending"
}
