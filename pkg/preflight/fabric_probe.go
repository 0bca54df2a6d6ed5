package preflight

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// ProbeForbiddenError: the user may not run probe pods here; Missing lists the verbs
// ("create pods", "get pods/log") the SelfSubjectAccessReview denied.
type ProbeForbiddenError struct {
	Namespace string
	Missing   []string
}

func (e *ProbeForbiddenError) Error() string {
	return fmt.Sprintf("probe pods need %s in namespace %s: denied", strings.Join(e.Missing, ", "), e.Namespace)
}

// probeAccesses are what a probe run does: create the pods, follow them (one watch), read their
// logs and delete them.
var probeAccesses = []access{
	{verb: "create", resource: "pods"}, {verb: "watch", resource: "pods"},
	{verb: "get", resource: "pods", sub: "log"}, {verb: "delete", resource: "pods"},
}

// CanProbe asks the API server (SelfSubjectAccessReview) whether the user may run probe pods in
// o.Namespace; a *ProbeForbiddenError names the verbs denied. Asking first leaves nothing
// half-done: a read-only user gets the answer before any pod is created.
func CanProbe(ctx context.Context, o Options) error {
	denied := make([]bool, len(probeAccesses))
	errs := make([]error, len(probeAccesses))
	var wg sync.WaitGroup
	for i, a := range probeAccesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := o.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
				Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
					Namespace: o.Namespace, Verb: a.verb, Resource: a.resource, Subresource: a.sub}},
			}, metav1.CreateOptions{})
			errs[i] = err
			denied[i] = err == nil && !r.Status.Allowed
		}()
	}
	wg.Wait()
	fe := &ProbeForbiddenError{Namespace: o.Namespace}
	for i, a := range probeAccesses {
		if errs[i] != nil {
			return fmt.Errorf("asking whether probe pods may run (%s): %w", a, errs[i])
		}
		if denied[i] {
			fe.Missing = append(fe.Missing, a.String())
		}
	}
	if len(fe.Missing) > 0 {
		return fe
	}
	return nil
}

// ProbeFabric runs the IB port probe on each named node, in pods that hold o.Profile's RDMA
// resource and join its Multus networks (so they see the devices, ports and GIDs a rank sees),
// and returns per node the dump and the pod's networks. It checks the user's rights first
// (CanProbe: a *ProbeForbiddenError when denied); a pod the server still refuses is reported the
// same way.
func ProbeFabric(ctx context.Context, o Options, nodes []string) ([]FabricProbe, error) {
	o.defaults()
	if err := CanProbe(ctx, o); err != nil {
		return nil, err
	}
	outs := runIBProbes(ctx, o, nodesNamed(nodes))
	res := make([]FabricProbe, len(nodes))
	for i, out := range outs {
		r := &res[i]
		r.Node, r.Pod = nodes[i], out.Pod.Name
		// RBAC's refusal ("User x cannot create resource pods"), not an admission's (Pod Security,
		// a quota: also 403), which notRun reports with the pod.
		if apierrors.IsForbidden(out.CreateErr) && strings.Contains(out.CreateErr.Error(), "cannot create resource") {
			return nil, &ProbeForbiddenError{Namespace: o.Namespace, Missing: []string{"create pods (" + out.CreateErr.Error() + ")"}}
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
				out.Pod.Name, len(out.Log), o.Profile.Spec.RDMA.Resource)
		default:
			r.Report = rep
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// nodesNamed are nodes with only their names set: what runIBProbes pins its pods to.
func nodesNamed(names []string) []corev1.Node {
	ns := make([]corev1.Node, len(names))
	for i, n := range names {
		ns[i].Name = n
	}
	return ns
}
