package vllm

import (
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// EntryChoice is how a model server is to be reached from outside the cluster, as `ain serve`
// and `ain render` are told: each field is the flag of that name, an override of a serving
// recipe's field, validated and located like it (by the flag as typed).
type EntryChoice struct {
	Expose       string
	Gateway      string // [NAMESPACE/]NAME[:LISTENER] of an existing Gateway
	GatewayClass string
	Host         string
}

// EntryChoiceError is a choice that cannot be made (two flags that exclude each other, a
// malformed --gateway, entry flags on a recipe that does not serve).
type EntryChoiceError struct{ Reason string }

func (e *EntryChoiceError) Error() string { return e.Reason }

func choiceErr(format string, args ...any) error {
	return &EntryChoiceError{Reason: fmt.Sprintf(format, args...)}
}

// Apply records the choice as overrides of the recipe through set (by: the flag as typed;
// field: recipe --set syntax), --host last: its field depends on the rest. load loads the
// recipe with the overrides recorded so far. On a recipe that is not a serving one the flags
// are refused by name, not reported as unknown spec fields.
func (e EntryChoice) Apply(set func(by, field string), load func() (*recipe.Recipe, error)) error {
	flag := e.first()
	if flag == "" {
		return nil
	}
	if e.Gateway != "" && e.GatewayClass != "" {
		return choiceErr("--gateway %s and --gateway-class %s: choose one (an existing Gateway, or one ain creates of that class)", e.Gateway, e.GatewayClass)
	}
	r, err := load()
	if err != nil {
		return err
	}
	if r.Serving == nil {
		return choiceErr("%s: only serving recipes (ain recipes list shows their kind) have an ingress host or an entry; drop %s", flag, strings.Fields(flag)[0])
	}
	gw := "--gateway " + e.Gateway
	if e.GatewayClass != "" {
		gw = "--gateway-class " + e.GatewayClass
	}
	if (e.Gateway != "" || e.GatewayClass != "") && e.Expose != "" && e.Expose != recipe.ExposeGateway && e.Expose != recipe.ExposeAuto {
		return choiceErr("%s with --expose %s: %s names a Gateway API entry; drop one", gw, e.Expose, gw)
	}
	if e.Expose != "" {
		set("--expose "+e.Expose, "expose="+e.Expose)
	}
	switch {
	case e.GatewayClass != "":
		// The flag wins over the recipe's choice of an existing Gateway.
		for _, s := range []string{"gateway.className=" + e.GatewayClass, "gateway.name=", "gateway.namespace=", "gateway.sectionName="} {
			set(gw, s)
		}
	case e.Gateway != "":
		ns, name, listener, err := parseGatewayRef(e.Gateway)
		if err != nil {
			return err
		}
		for _, s := range []string{"gateway.name=" + name, "gateway.namespace=" + ns, "gateway.sectionName=" + listener, "gateway.className="} {
			set(gw, s)
		}
	}
	if (e.Gateway != "" || e.GatewayClass != "") && e.Expose == "" {
		set(gw, "expose="+recipe.ExposeGateway)
	}
	if e.Host == "" {
		return nil
	}
	if e.Expose != "" || e.Gateway != "" || e.GatewayClass != "" {
		if r, err = load(); err != nil {
			return err
		}
	}
	set("--host "+e.Host, hostField(r.Serving)+"="+e.Host)
	return nil
}

// first is the first entry flag given, as typed ("" for none).
func (e EntryChoice) first() string {
	if f := e.exposeFlag(); f != "" {
		return f
	}
	if e.Host != "" {
		return "--host " + e.Host
	}
	return ""
}

// exposeFlag is the first flag that chooses the entry's kind, as typed ("" for none).
func (e EntryChoice) exposeFlag() string {
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

// Source says who chose spec.expose: the flag, or the recipe (DeployOptions.ExposeSource).
func (e EntryChoice) Source(s *recipe.ServingSpec) string {
	if f := e.exposeFlag(); f != "" {
		return f
	}
	return "spec.expose " + s.Expose
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
			return "", "", "", choiceErr("--gateway %s: no listener after ':' (write [NAMESPACE/]NAME[:LISTENER])", s)
		}
	}
	if i := strings.Index(rest, "/"); i >= 0 {
		ns, name = rest[:i], rest[i+1:]
		if ns == "" || strings.Contains(name, "/") {
			return "", "", "", choiceErr("--gateway %s: write [NAMESPACE/]NAME[:LISTENER]", s)
		}
	} else {
		name = rest
	}
	if name == "" {
		return "", "", "", choiceErr("--gateway %s: no Gateway name (write [NAMESPACE/]NAME[:LISTENER])", s)
	}
	return ns, name, listener, nil
}
