package kube

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Resource says where objects of one kind live on the API server.
type Resource struct {
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// Core resources ain's workloads create besides their own kinds.
var (
	ConfigMaps = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespaced: true}
	Secrets    = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Namespaced: true}
	Services   = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Namespaced: true}
)

// DryRun selects how much of an apply happens.
type DryRun int

const (
	// DryRunNone applies for real.
	DryRunNone DryRun = iota
	// DryRunServer sends the apply with dryRun=All: the API server validates it (schema,
	// defaulting, admission webhooks) and answers with the object it would store, persisting nothing.
	DryRunServer
)

// Applier server-side applies objects and prunes the ones a run no longer renders. The kinds it
// may touch are listed in Kinds: anything else is refused before a request is sent, so a
// command never creates an object of a kind it does not know how to find and delete again.
type Applier struct {
	Dynamic dynamic.Interface
	// Namespace is given to namespaced objects that have none.
	Namespace string
	// FieldManager owns the applied fields (default FieldManager, "ain").
	FieldManager string
	// Kinds maps each kind this applier may touch to its resource.
	Kinds map[string]Resource
	// Force takes ownership of fields another manager set, as kubectl apply --server-side
	// --force-conflicts does. Without it such fields make Apply fail with a ConflictError
	// that names the other managers.
	Force bool
	// KeepSpec lists kinds whose spec cannot change once created (a submitted training job's
	// replicas and pod templates). Such an object is created (never applied over, so of two
	// runs racing on one name exactly one creates it); an existing one is compared with a
	// server dry-run create of the rendering: the same spec is left untouched and reported
	// Unchanged (an idempotent re-run), another stops Apply with a SpecChangeError.
	KeepSpec map[string]bool
}

// Applied is the outcome of applying one object.
type Applied struct {
	// Object is what the server stored (or, for a dry run, would store).
	Object *unstructured.Unstructured
	// Unchanged is set for a KeepSpec object that already existed with the same spec: nothing
	// was sent and Object is the existing one.
	Unchanged bool
}

// SpecChangeError says an existing object of a KeepSpec kind has a different spec than the
// one rendered now. Existing is the object on the server.
type SpecChangeError struct {
	Kind, Name, Namespace string
	Existing              *unstructured.Unstructured
}

func (e *SpecChangeError) Error() string {
	return fmt.Sprintf("%s %s/%s already exists with a different spec", e.Kind, e.Namespace, e.Name)
}

func (a *Applier) fieldManager() string {
	if a.FieldManager != "" {
		return a.FieldManager
	}
	return FieldManager
}

// resource returns the client for u's kind and namespace (u's, else the applier's).
func (a *Applier) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	r, ok := a.Kinds[u.GetKind()]
	if !ok {
		return nil, fmt.Errorf("%s: ain does not apply %s objects here", u.GetName(), u.GetKind())
	}
	if !r.Namespaced {
		return a.Dynamic.Resource(r.GVR), nil
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(a.Namespace)
	}
	return a.Dynamic.Resource(r.GVR).Namespace(u.GetNamespace()), nil
}

// BundleTimeout bounds how long Apply goes on with a bundle after ctx was cancelled.
const BundleTimeout = 30 * time.Second

// Finishing returns a context for finishing a bundle after ctx was cancelled (an interrupt):
// not cancelled with ctx, bounded by BundleTimeout.
func Finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), BundleTimeout)
}

// Apply server-side applies objs in order (typed objects are converted with ToUnstructured;
// *unstructured.Unstructured are sent as they are). It stops at the first error and returns
// what was applied before it, so a caller can say exactly what exists. Errors about one object
// are NotFoundError (its kind is not installed), ForbiddenError, ConflictError, SpecChangeError,
// or wrapped with the object's kind and name.
//
// The objects are one bundle (a job and its ConfigMap, Deployments and their Service): once the
// first request is sent, cancelling ctx does not stop Apply half-way, which would leave objects
// that make no sense alone. It finishes the bundle (within BundleTimeout) and returns; the
// caller sees ctx.Err() and says what it left. If ctx is already done nothing is sent and its
// error is returned.
func (a *Applier) Apply(ctx context.Context, objs []runtime.Object, dry DryRun) ([]Applied, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := Finishing(ctx)
	defer cancel()
	out := make([]Applied, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			var err error
			if u, err = ToUnstructured(o); err != nil {
				return out, err
			}
		}
		res, err := a.applyOne(ctx, u, dry)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (a *Applier) applyOne(ctx context.Context, u *unstructured.Unstructured, dry DryRun) (Applied, error) {
	ri, err := a.resource(u)
	if err != nil {
		return Applied{}, err
	}
	kind, name, ns := u.GetKind(), u.GetName(), u.GetNamespace()
	opts := metav1.ApplyOptions{FieldManager: a.fieldManager(), Force: a.Force}
	if dry == DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if !a.KeepSpec[kind] {
		applied, err := ri.Apply(ctx, name, u, opts)
		if err != nil {
			return Applied{}, typed(err, "apply", kind, name, ns)
		}
		return Applied{Object: applied}, nil
	}
	// A KeepSpec object is created, never applied over: two runs that both found no object of
	// this name (two `ain train --name x` at once) would otherwise both apply, the second
	// silently replacing the first's spec. Create lets exactly one of them win; the other gets
	// AlreadyExists and is judged below against what the winner stored.
	for attempt := 0; ; attempt++ {
		existing, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !IsNotFound(err) {
			return Applied{}, typed(err, "get", kind, name, ns)
		}
		if err == nil {
			return a.sameSpec(ctx, ri, u, existing)
		}
		if dry == DryRunServer {
			applied, err := ri.Apply(ctx, name, u, opts)
			if err != nil {
				return Applied{}, typed(err, "apply", kind, name, ns)
			}
			return Applied{Object: applied}, nil
		}
		created, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: a.fieldManager()})
		if err == nil {
			return Applied{Object: created}, nil
		}
		if !apierrors.IsAlreadyExists(err) || attempt > 0 {
			return Applied{}, typed(err, "create", kind, name, ns)
		}
		// Created by someone else since our Get: compare with theirs.
	}
}

// sameSpec asks the server what u would store if it were created now (a dry-run create under a
// generated name, so defaulting and admission are the server's and the existing object's field
// owners play no part) and compares that spec with existing's: the same is an idempotent re-run
// (Unchanged, nothing sent), another a SpecChangeError.
func (a *Applier) sameSpec(ctx context.Context, ri dynamic.ResourceInterface, u, existing *unstructured.Unstructured) (Applied, error) {
	kind, name, ns := u.GetKind(), u.GetName(), u.GetNamespace()
	probe := u.DeepCopy()
	probe.SetName("")
	probe.SetGenerateName(name + "-")
	probe.SetResourceVersion("")
	would, err := ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: a.fieldManager()})
	if err != nil {
		return Applied{}, typed(err, "create (dry run)", kind, name, ns)
	}
	if !reflect.DeepEqual(would.Object["spec"], existing.Object["spec"]) {
		return Applied{}, &SpecChangeError{Kind: kind, Name: name, Namespace: ns, Existing: existing}
	}
	return Applied{Object: existing, Unchanged: true}, nil
}

// Prune deletes the objects of run that ain created (labels RunLabels(run), plus extra when
// set, e.g. a component label) in the applier's namespace, of the applier's namespaced kinds,
// that are not in keep: what an earlier apply of the run rendered and this one no longer does.
// Typical use, after a successful Apply of the new rendering:
//
//	applied, err := ap.Apply(ctx, objs, kube.DryRunNone)
//	...
//	pruned, err := ap.Prune(ctx, run, nil, applied)
//
// so `ain serve --replicas 2` followed by `--replicas 1` deletes the second Deployment. Objects
// without ain's managed-by label, or of another run, are never touched. It returns "Kind/name"
// of each object deleted, sorted; a kind whose CRD is not installed is skipped. Deletion uses
// background propagation (owned pods go with their owner).
func (a *Applier) Prune(ctx context.Context, run string, extra map[string]string, keep []Applied) ([]string, error) {
	if run == "" {
		return nil, fmt.Errorf("prune: no run name: refusing to select every object ain created")
	}
	sel := labels.Set(RunLabels(run))
	for k, v := range extra {
		sel[k] = v
	}
	kept := map[string]bool{}
	for _, k := range keep {
		if k.Object != nil {
			kept[k.Object.GetKind()+"/"+k.Object.GetName()] = true
		}
	}
	kinds := make([]string, 0, len(a.Kinds))
	for k, r := range a.Kinds {
		if r.Namespaced {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	var pruned []string
	bg := metav1.DeletePropagationBackground
	for _, kind := range kinds {
		ri := a.Dynamic.Resource(a.Kinds[kind].GVR).Namespace(a.Namespace)
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			if IsNotFound(err) {
				continue // the kind is not installed: nothing of it to prune
			}
			return pruned, typed(err, "list", kind, "", a.Namespace)
		}
		for _, item := range list.Items {
			if kept[kind+"/"+item.GetName()] {
				continue
			}
			uid := item.GetUID()
			err := ri.Delete(ctx, item.GetName(), metav1.DeleteOptions{
				PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid},
			})
			if err != nil && !IsNotFound(err) {
				return pruned, typed(err, "delete", kind, item.GetName(), a.Namespace)
			}
			pruned = append(pruned, kind+"/"+item.GetName())
		}
	}
	sort.Strings(pruned)
	return pruned, nil
}
