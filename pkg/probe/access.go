package probe

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ain-hpc/ain/pkg/kube"
)

// ForbiddenError: the user may not run probe pods here; Missing lists the verbs ("create pods",
// "get pods/log") the SelfSubjectAccessReview denied.
type ForbiddenError struct {
	Namespace string
	Missing   []string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("probe pods need %s in namespace %s: denied", strings.Join(e.Missing, ", "), e.Namespace)
}

// accesses are what a run does: create the pods, follow them (one watch), read their logs and
// delete them.
var accesses = []struct{ verb, sub string }{{"create", ""}, {"watch", ""}, {"get", "log"}, {"delete", ""}}

// CanRun asks the API server (SelfSubjectAccessReview) whether the user may run probe pods in
// o.Namespace; a *ForbiddenError names the verbs denied. Asking first leaves nothing half-done:
// a read-only user gets the answer before any pod is created.
func CanRun(ctx context.Context, o Options) error {
	denied := make([]bool, len(accesses))
	errs := make([]error, len(accesses))
	var wg sync.WaitGroup
	for i, a := range accesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := o.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
				Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
					Namespace: o.Namespace, Verb: a.verb, Resource: "pods", Subresource: a.sub}},
			}, metav1.CreateOptions{})
			errs[i] = err
			denied[i] = err == nil && !r.Status.Allowed
		}()
	}
	wg.Wait()
	fe := &ForbiddenError{Namespace: o.Namespace}
	for i, a := range accesses {
		what := a.verb + " pods"
		if a.sub != "" {
			what += "/" + a.sub
		}
		if errs[i] != nil {
			return fmt.Errorf("asking whether probe pods may run (%s): %w", what, errs[i])
		}
		if denied[i] {
			fe.Missing = append(fe.Missing, what)
		}
	}
	if len(fe.Missing) > 0 {
		return fe
	}
	return nil
}

// OptionsFor are the options of probe pods run with kc's clients in its namespace, with image
// ("": DefaultImage) and the per-node creates rate-limited by kc.FanOut when it can be made.
func OptionsFor(kc *kube.Clients, image string) Options {
	o := Options{Kube: kc.Kube, Namespace: kc.Namespace, Image: image}
	if fo, err := kc.FanOut(); err == nil {
		o.FanOut = fo // else the probe pods are created with kc.Kube, at its rate
	}
	return o
}
