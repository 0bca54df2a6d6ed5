package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/recipe"
	"github.com/ain-hpc/ain/pkg/vllm"
)

// entryFlags choose how a model server is reached from outside the cluster (ain serve,
// ain render): each is an override of a recipe field, validated and located like it.
type entryFlags struct {
	Expose       string
	Gateway      string
	GatewayClass string
	Host         string
}

func (e *entryFlags) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "host", Usage: "the DNS name clients use: the Ingress's host, or the HTTPRoute's hostname (sets spec.ingress.host, or spec.gateway.host for a Gateway API entry)", Destination: &e.Host},
		&ucli.StringFlag{Name: "expose", Usage: "the entry from outside the cluster: auto (ain decides and says why; a model server keeps the entry it has), ingress, gateway (a Gateway API HTTPRoute) or none (sets spec.expose)", Destination: &e.Expose},
		&ucli.StringFlag{Name: "gateway", Usage: "attach the HTTPRoute to this existing Gateway, `[NAMESPACE/]NAME[:LISTENER]`, which ain never changes nor deletes (sets spec.gateway.name, namespace and sectionName; implies --expose gateway)", Destination: &e.Gateway},
		&ucli.StringFlag{Name: "gateway-class", Usage: "create a Gateway of this GatewayClass for the HTTPRoute, HTTPS on port 443 (sets spec.gateway.className; implies --expose gateway)", Destination: &e.GatewayClass},
	}
}

// set records the entry flags as overrides of in's recipe (--host last: hostField needs the
// rest). load loads the recipe with the overrides recorded so far. On a recipe that is not a
// serving one the flags are refused by name, not reported as unknown spec fields.
func (e *entryFlags) set(in *recipeInput, load func() (*recipe.Recipe, error)) error {
	flag := e.first()
	if flag == "" {
		return nil
	}
	if e.Gateway != "" && e.GatewayClass != "" {
		return ainerr.Usagef("--gateway %s and --gateway-class %s: choose one (an existing Gateway, or one ain creates of that class)", e.Gateway, e.GatewayClass)
	}
	r, err := load()
	if err != nil {
		return err
	}
	if r.Serving == nil {
		return ainerr.Usagef("%s: only serving recipes (ain recipes list shows their kind) have an ingress host or an entry; drop %s", flag, strings.Fields(flag)[0])
	}
	gw := "--gateway " + e.Gateway
	if e.GatewayClass != "" {
		gw = "--gateway-class " + e.GatewayClass
	}
	if (e.Gateway != "" || e.GatewayClass != "") && e.Expose != "" && e.Expose != recipe.ExposeGateway && e.Expose != recipe.ExposeAuto {
		return ainerr.Usagef("%s with --expose %s: %s names a Gateway API entry; drop one", gw, e.Expose, gw)
	}
	if e.Expose != "" {
		in.setBy("--expose "+e.Expose, "expose="+e.Expose)
	}
	switch {
	case e.GatewayClass != "":
		// The flag wins over the recipe's choice of an existing Gateway.
		for _, set := range []string{"gateway.className=" + e.GatewayClass, "gateway.name=", "gateway.namespace=", "gateway.sectionName="} {
			in.setBy(gw, set)
		}
	case e.Gateway != "":
		ns, name, listener, err := parseGatewayRef(e.Gateway)
		if err != nil {
			return err
		}
		for _, set := range []string{"gateway.name=" + name, "gateway.namespace=" + ns, "gateway.sectionName=" + listener, "gateway.className="} {
			in.setBy(gw, set)
		}
	}
	if (e.Gateway != "" || e.GatewayClass != "") && e.Expose == "" {
		in.setBy(gw, "expose="+recipe.ExposeGateway)
	}
	if e.Host == "" {
		return nil
	}
	if e.Expose != "" || e.Gateway != "" || e.GatewayClass != "" {
		if r, err = load(); err != nil {
			return err
		}
	}
	in.setBy("--host "+e.Host, hostField(r.Serving)+"="+e.Host)
	return nil
}

// first is the first entry flag given, as typed ("" for none).
func (e *entryFlags) first() string {
	if f := e.exposeFlag(); f != "" {
		return f
	}
	if e.Host != "" {
		return "--host " + e.Host
	}
	return ""
}

// exposeFlag is the first flag that chooses the entry's kind, as typed ("" for none).
func (e *entryFlags) exposeFlag() string {
	switch {
	case e.Expose != "":
		return "--expose " + e.Expose
	case e.Gateway != "":
		return "--gateway " + e.Gateway
	case e.GatewayClass != "":
		return "--gateway-class " + e.GatewayClass
	}
	return ""
}

// hostField is the field --host sets: spec.gateway.host when the recipe (with the other flags)
// asks for a Gateway API entry, or has only spec.gateway; else spec.ingress.host, which a
// Gateway API entry chosen by auto takes over (recipe.ServingSpec.WithEntry).
func hostField(s *recipe.ServingSpec) string {
	if s.Expose == recipe.ExposeGateway || (s.Gateway != nil && s.Ingress == nil) {
		return "gateway.host"
	}
	return "ingress.host"
}

// parseGatewayRef reads --gateway [NAMESPACE/]NAME[:LISTENER].
func parseGatewayRef(s string) (ns, name, listener string, err error) {
	rest := s
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		rest, listener = rest[:i], rest[i+1:]
		if listener == "" {
			return "", "", "", ainerr.Usagef("--gateway %s: no listener after ':' (write [NAMESPACE/]NAME[:LISTENER])", s)
		}
	}
	if i := strings.Index(rest, "/"); i >= 0 {
		ns, name = rest[:i], rest[i+1:]
		if ns == "" || strings.Contains(name, "/") {
			return "", "", "", ainerr.Usagef("--gateway %s: write [NAMESPACE/]NAME[:LISTENER]", s)
		}
	} else {
		name = rest
	}
	if name == "" {
		return "", "", "", ainerr.Usagef("--gateway %s: no Gateway name (write [NAMESPACE/]NAME[:LISTENER])", s)
	}
	return ns, name, listener, nil
}

// exposeSource says who chose spec.expose: the flag, or the recipe.
func (e *entryFlags) exposeSource(s *recipe.ServingSpec) string {
	if f := e.exposeFlag(); f != "" {
		return f
	}
	return "spec.expose " + s.Expose
}

// offlineEntry resolves the entry without a cluster (ain render) and says which on stderr
// (vllm.OfflineEntry).
func (a *App) offlineEntry(r *recipe.Recipe, e *entryFlags) {
	for _, l := range vllm.OfflineEntry(r, e.exposeSource(r.Serving)) {
		fmt.Fprintln(a.Streams.Err, l)
	}
}
