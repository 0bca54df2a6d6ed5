package preflight

import (
	"time"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// OptionsFor fills the options every preflight run shares: the cluster's clients and identity,
// the profile, and what the recipe (nil: none) asks of the cluster (its shape, volumes, data
// paths, image and job API; a serving recipe's claims, model and image). probeImage "" is the default probe image.
func OptionsFor(kc *kube.Clients, r *recipe.Recipe, p *profile.Profile, probeImage string, now func() time.Time) Options {
	po := probe.OptionsFor(kc, probeImage)
	o := Options{
		Kube: kc.Kube, FanOut: po.FanOut, Dynamic: kc.Dynamic, Namespace: kc.Namespace, Cluster: kc.Server, User: kube.Identity(kc.Config), Profile: p,
		ProbeImage: probeImage, Now: now,
	}
	if r != nil {
		if w := r.Workload(); w != nil {
			o.Nodes, o.GPUsPerNode, o.Arches = w.Nodes, w.GPUsPerNode, w.Architectures
			for _, v := range w.Volumes {
				o.Volumes = append(o.Volumes, claims.Use{Volume: v.Name, Claim: v.ClaimName})
			}
		}
		if w := r.Workload(); w != nil {
			o.Storage = Storage{Mounts: w.Volumes, Paths: r.DataPaths(), DefaultCapabilities: r.Serving == nil}
			o.Tools, o.ImagePullPolicy = r.Tools(), w.ImagePullPolicy
		}
		o.Workload = jobs.WorkloadOf(r)
		if s := r.Serving; s != nil {
			// Its replicas need no recipe shape for the node check; its claims, the model on
			// them and its image are still checked.
			for _, v := range s.Volumes {
				o.Volumes = append(o.Volumes, claims.Use{Volume: v.Name, Claim: v.ClaimName})
			}
			o.Storage = Storage{Mounts: s.Volumes, Paths: r.DataPaths()}
			o.Tools = r.Tools()
		}
	}
	// The profile's spec.jobAPI (validated when the profile loaded); --api sets o.API after this.
	o.API, _ = jobs.ParseAPI(p.Spec.JobAPI)
	return o
}
