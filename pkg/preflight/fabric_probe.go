package preflight

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/probe"
)

// FabricProbe is what the fabric probe saw in its pod on one node: the port dump (state, link
// layer, rate, GID tables: ibport.SysfsDumpCommand) and the pod's own networks.
type FabricProbe struct {
	Node, Pod string
	// Report is the parsed dump; Log the dump itself.
	Report *ibport.Report
	Log    []byte
	// Networks is the pod's Multus network-status (nil when Multus wrote none: no secondary
	// network, or no Multus).
	Networks []probe.PodNetwork
	// Err says why there is no report (the pod did not run, printed no port).
	Err string
}

// ProbeFabric runs the IB port probe on each named node, in pods that hold o.RDMA's resource
// and join its Multus networks (so they see the devices, ports and GIDs a rank sees), and
// returns per node the dump and the pod's networks. It checks the user's rights first
// (probe.CanRun: a *probe.ForbiddenError when denied); a pod the server still refuses is
// reported the same way.
func ProbeFabric(ctx context.Context, o probe.Options, nodes []string) ([]FabricProbe, error) {
	o = o.Defaults()
	if err := probe.CanRun(ctx, o); err != nil {
		return nil, err
	}
	outs := runIBProbes(ctx, o, named(nodes))
	res := make([]FabricProbe, len(nodes))
	for i, out := range outs {
		r := &res[i]
		r.Node, r.Pod = nodes[i], out.Pod.Name
		// RBAC's refusal ("User x cannot create resource pods"), not an admission's (Pod Security,
		// a quota: also 403), which NotRun reports with the pod.
		if apierrors.IsForbidden(out.CreateErr) && strings.Contains(out.CreateErr.Error(), "cannot create resource") {
			return nil, &probe.ForbiddenError{Namespace: o.Namespace, Missing: []string{"create pods (" + out.CreateErr.Error() + ")"}}
		}
		r.Networks = probe.ParseNetworkStatus(out.Pod.Annotations[probe.NetworkStatusAnnotation])
		if out.Log == nil {
			r.Err = out.NotRun()
			continue
		}
		r.Log = out.Log
		rep, err := ibport.Parse(bytes.NewReader(out.Log))
		switch {
		case err != nil:
			r.Err = "reading the probe's output: " + err.Error()
		case len(rep.Ports) == 0:
			r.Err = fmt.Sprintf("probe pod %s printed no /sys/class/infiniband port (%d bytes of log): no RDMA device visible in a pod holding %s",
				out.Pod.Name, len(out.Log), o.RDMA.Resource)
		default:
			r.Report = rep
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}
