package jobs

import (
	"errors"
	"time"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// ChooseForRender picks the job API for rendering r, which needs no cluster: forced when it is
// not APIAuto, else the APIs of the cluster that cluster configures when it answers discovery
// within timeout, else (no kubeconfig, unreachable, serving none of ain's APIs) the documented
// default. why says which, for the user: the output's API is never a surprise.
func ChooseForRender(r *recipe.Recipe, forced API, cluster func() (*kube.Clients, error), timeout time.Duration) (b Backend, why string, err error) {
	served := Served{}
	why = "no cluster asked"
	if forced == APIAuto {
		// Why no cluster was asked is said: a kubeconfig named but missing is not "no cluster".
		if kc, err := cluster(); err != nil {
			why += ": " + err.Error()
		} else if d, err := kc.DiscoveryWithin(timeout); err == nil {
			if s, err := Discover(d); err == nil {
				served, why = s, "served by "+kc.Server
			} else {
				why = "cluster " + kc.Server + " not reachable"
			}
		}
	} else {
		why = "forced"
	}
	b, err = Choose(r, served, forced)
	var none *NoAPIError
	if errors.As(err, &none) {
		// render needs no cluster: one that serves no job API gets the default, said so.
		why += ", which serves none of ain's job APIs: the default"
		b, err = Choose(r, Served{}, forced)
	}
	return b, why, err
}
