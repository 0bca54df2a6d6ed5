package vllm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ain-hpc/ain/pkg/kube"
	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// StalledError is a replica whose rollout passed its progress deadline.
// Server and Namespace name the model server, when the caller knows it.
type StalledError struct {
	Deployment string
	Message    string
	Server     string
	Namespace  string
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("replica %s did not become ready: %s", e.Deployment, e.Message)
}

// WaitTimeoutError is a wait that ran out of time; Last is the last state seen.
// Gateway: the replicas were ready and the wait was for the Gateway to serve the route.
type WaitTimeoutError struct {
	What    string
	Timeout time.Duration
	Last    string
	Gateway bool
	// Server and Namespace name the model server, when the caller knows it.
	Server, Namespace string
}

func (e *WaitTimeoutError) Error() string {
	return fmt.Sprintf("%s was not ready within %s (last: %s)", e.What, e.Timeout, e.Last)
}

// WaitOptions say what WaitReady waits for and whom it tells.
type WaitOptions struct {
	Name  string // the deployment (ain serve --name)
	Model string // the served model name /v1/models must list
	// Timeout bounds the whole wait.
	Timeout time.Duration
	// Connect opens a client to the deployment once every replica is ready (through its
	// ingress, or what the caller allows); it is called once.
	Connect func(ctx context.Context, st *ServingStatus) (*openaiclient.Client, error)
	// Progress receives each change of state with the time since the start.
	Progress func(elapsed time.Duration, line string)
	Now      func() time.Time
	// Poll is the interval between two looks (default 2 s).
	Poll time.Duration
}

// WaitReady follows the replicas until every pod is ready (the kubelet's /health probes),
// then until the endpoint's /v1/models lists the model: /health turns true before vLLM can
// answer. It returns the client that answered.
func (c *Cluster) WaitReady(parent context.Context, o WaitOptions) (*openaiclient.Client, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll == 0 {
		o.Poll = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	start, last, gateway := o.Now(), "", false
	say := func(line string) {
		if line != last && o.Progress != nil {
			o.Progress(o.Now().Sub(start), line)
		}
		last, gateway = line, false
	}
	var client *openaiclient.Client
	var refused time.Time // when the route was first seen refused
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		st, err := c.Status(ctx, o.Name)
		if err != nil && ctx.Err() == nil {
			var nf *NotFoundError
			switch {
			case kube.Outage(err):
				say("the API server does not answer (" + err.Error() + "): asking again until the timeout")
			case !errors.As(err, &nf):
				return nil, err
			}
		}
		if st != nil {
			say(ProgressLine(st))
			for _, r := range st.Replicas {
				if r.Stalled != "" {
					return nil, &StalledError{Deployment: r.Deployment, Message: r.Stalled}
				}
			}
			// A route its Gateway refuses is explained, not waited on: at once when the
			// replicas are ready, else once it has stayed refused for routeGrace (a
			// controller may judge a route before the Gateway it just created is ready).
			if r := st.Route; r != nil && r.Problem != "" && !r.Pending {
				if refused.IsZero() {
					refused = o.Now()
				}
				if st.AllReady() || o.Now().Sub(refused) >= routeGrace {
					return nil, &RouteError{Server: o.Name, Route: *r}
				}
			} else {
				refused = time.Time{}
			}
			if r := st.Route; st.AllReady() && r != nil && r.Problem != "" {
				// Pending: the controller has not reported yet, or the Gateway has no
				// address; the timeout bounds the wait, and its error says what was awaited.
				say("replicas ready; waiting for the Gateway: " + r.Problem)
				gateway = true
			} else if st.AllReady() {
				if client == nil {
					if client, err = o.Connect(ctx, st); err != nil {
						if ctx.Err() == nil {
							return nil, err
						}
					}
				}
				if client != nil {
					err := modelListed(ctx, client, o.Model)
					if err == nil {
						return client, nil
					}
					if openaiclient.ReasonOf(err) == openaiclient.ReasonUnauthorized {
						return nil, err
					}
					say("replicas ready; waiting for the endpoint: " + err.Error())
				}
			}
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			return nil, &WaitTimeoutError{What: "model server " + o.Name, Timeout: o.Timeout, Last: last, Gateway: gateway}
		case <-tick.C:
		}
	}
}

// routeGrace is how long a route refused by its Gateway is given to be accepted while the
// replicas still load.
const routeGrace = 30 * time.Second

func modelListed(ctx context.Context, c *openaiclient.Client, model string) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	models, err := c.Models(pctx)
	if err != nil {
		return err
	}
	for _, m := range models {
		if m.ID == model {
			return nil
		}
	}
	return fmt.Errorf("/v1/models does not list %s yet", model)
}

// ProgressLine is one line: ready/total and each pod's state.
func ProgressLine(st *ServingStatus) string {
	var pods []string
	for _, r := range st.Replicas {
		for _, p := range r.Pods {
			s := p.Name + " " + p.Phase
			if p.Ready {
				s += " ready"
			}
			if p.Node != "" {
				s += " on " + p.Node
			}
			if p.Reason != "" {
				s += " (" + p.Reason + ")"
			}
			pods = append(pods, s)
		}
	}
	if len(pods) == 0 {
		pods = append(pods, "no pods yet")
	}
	for _, r := range st.Replicas {
		if r.Rolling != "" {
			pods = append(pods, r.Deployment+": "+r.Rolling)
		}
	}
	if r := st.Route; r != nil && r.Problem != "" {
		pods = append(pods, r.Problem)
	}
	return fmt.Sprintf("%d/%d replicas ready: %s", st.Ready, st.Desired, strings.Join(pods, "; "))
}

// RollOptions configure ApplyRolling.
type RollOptions struct {
	// ReplicaTimeout bounds the wait for one changed replica to be ready again.
	ReplicaTimeout time.Duration
	Progress       func(line string)
	Poll           time.Duration
}

// ApplyRolling applies the Deployments of a serving deployment. New ones are applied
// together (nothing serves yet, so there is nothing to keep up). When some already exist,
// they are applied one at a time, and after each whose spec changed ain waits until its new
// pod is ready before touching the next: each independent replica holds its GPU and uses the
// Recreate strategy, so applying all at once would take the whole service down for the
// model's load time; one at a time, the others keep serving behind the Service.
func (c *Cluster) ApplyRolling(ctx context.Context, deps []*appsv1.Deployment, o RollOptions) ([]runtime.Object, error) {
	if o.Poll == 0 {
		o.Poll = 2 * time.Second
	}
	existing := 0
	for _, d := range deps {
		if _, err := c.Kube.AppsV1().Deployments(c.Namespace).Get(ctx, d.Name, metav1.GetOptions{}); err == nil {
			existing++
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	objs := make([]runtime.Object, len(deps))
	for i, d := range deps {
		objs[i] = d
	}
	if existing == 0 || len(deps) == 1 {
		_, err := c.Apply(ctx, objs, false)
		return objs, err
	}
	for i, d := range deps {
		applied, err := c.Apply(ctx, objs[i:i+1], false)
		if err != nil {
			return objs[:i], err
		}
		gen := applied[0].GetGeneration()
		if i == len(deps)-1 {
			break
		}
		if err := c.waitDeploymentReady(ctx, d.Name, gen, o); err != nil {
			return objs[:i+1], err
		}
	}
	return objs, nil
}

// waitDeploymentReady waits until the Deployment has rolled out generation gen: observed,
// every replica updated and ready, no old pod left.
func (c *Cluster) waitDeploymentReady(parent context.Context, name string, gen int64, o RollOptions) error {
	ctx, cancel := context.WithTimeout(parent, o.ReplicaTimeout)
	defer cancel()
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	said, last := false, ""
	for {
		d, err := c.Kube.AppsV1().Deployments(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && ctx.Err() == nil {
			if !kube.Outage(err) {
				return err
			}
			if !strings.HasPrefix(last, "the API server") && o.Progress != nil {
				o.Progress(fmt.Sprintf("rolling replica %s: the API server does not answer (%v): asking again until the timeout", name, err))
			}
			last = "the API server does not answer: " + err.Error()
		}
		if d != nil && err == nil {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			st := d.Status
			if st.ObservedGeneration >= gen && st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want {
				if said && o.Progress != nil {
					o.Progress(fmt.Sprintf("replica %s ready again; next replica", name))
				}
				return nil
			}
			for _, cond := range st.Conditions {
				if cond.Type == appsv1.DeploymentProgressing && cond.Reason == "ProgressDeadlineExceeded" {
					return &StalledError{Deployment: name, Message: cond.Message}
				}
			}
			last = fmt.Sprintf("%d/%d updated, %d ready", st.UpdatedReplicas, want, st.ReadyReplicas)
			if !said && o.Progress != nil {
				o.Progress(fmt.Sprintf("rolling replica %s: waiting for it to be ready before the next one (the others keep serving)", name))
				said = true
			}
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			return &WaitTimeoutError{What: "replica " + name, Timeout: o.ReplicaTimeout, Last: last}
		case <-tick.C:
		}
	}
}
