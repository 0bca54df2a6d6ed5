package preflight

import (
	"context"
	"sort"
)

// CandidateNodes lists the nodes a pod with o's shape (o.GPUsPerNode GPUs, the RDMA resource)
// can run on, sorted by name, and the nodes check that explains a shortage.
func CandidateNodes(ctx context.Context, o Options) ([]string, []Check) {
	o.defaults()
	checks, nodes := checkNodes(ctx, o)
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, checks
}
