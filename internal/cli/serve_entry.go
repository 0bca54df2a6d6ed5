package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm"
)

// entryFlags choose how a model server is reached from outside the cluster (ain serve,
// ain render): vllm.EntryChoice.
type entryFlags struct{ vllm.EntryChoice }

func (e *entryFlags) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "host", Usage: "the DNS name clients use: the Ingress's host, or the HTTPRoute's hostname (sets spec.ingress.host, or spec.gateway.host for a Gateway API entry)", Destination: &e.Host},
		&ucli.StringFlag{Name: "expose", Usage: "the entry from outside the cluster: auto (ain decides and says why; a model server keeps the entry it has), ingress, gateway (a Gateway API HTTPRoute) or none (sets spec.expose)", Destination: &e.Expose},
		&ucli.StringFlag{Name: "gateway", Usage: "attach the HTTPRoute to this existing Gateway, `[NAMESPACE/]NAME[:LISTENER]`, which ain never changes nor deletes (sets spec.gateway.name, namespace and sectionName; implies --expose gateway)", Destination: &e.Gateway},
		&ucli.StringFlag{Name: "gateway-class", Usage: "create a Gateway of this GatewayClass for the HTTPRoute, HTTPS on port 443 (sets spec.gateway.className; implies --expose gateway)", Destination: &e.GatewayClass},
	}
}

// set records the entry flags as overrides of in's recipe (vllm.EntryChoice.Apply); load
// loads the recipe with the overrides recorded so far.
func (e *entryFlags) set(in *recipeInput, load func() (*recipe.Recipe, error)) error {
	mapped, _ := libError(e.Apply(in.setBy, load), code[*vllm.EntryChoiceError](ainerr.Usage))
	return mapped
}

// exposeSource says who chose spec.expose: the flag, or the recipe.
func (e *entryFlags) exposeSource(s *recipe.ServingSpec) string { return e.Source(s) }

// offlineEntry resolves the entry without a cluster (ain render) and says which on stderr
// (vllm.OfflineEntry).
func (a *App) offlineEntry(r *recipe.Recipe, e *entryFlags) {
	for _, l := range vllm.OfflineEntry(r, e.exposeSource(r.Serving)) {
		fmt.Fprintln(a.Streams.Err, l)
	}
}
