package vllm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	k8stesting "k8s.io/client-go/testing"
)

// A rolling replica's wait rides out an API server that does not answer for a while (a restart:
// connection refused, then 503 while its storage comes back), saying so once, and still ends on
// an answer that is an answer (forbidden).
func TestWaitDeploymentReadyRidesOutAnOutage(t *testing.T) {
	one := int32(1)
	ready := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "rr-0", Namespace: "team", Generation: 2},
		Spec:   appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}
	refused := fmt.Errorf(`Get "https://127.0.0.1:6443/apis/apps/v1/namespaces/team/deployments/rr-0": dial tcp 127.0.0.1:6443: connect: %w`, syscall.ECONNREFUSED)
	cases := []struct {
		name    string
		errs    []error // returned by the first Gets, in order
		wantErr string
		outages int // progress lines about the API server
	}{
		{"restart", []error{refused, refused, apierrors.NewServiceUnavailable("etcd is starting"), apierrors.NewInternalError(errors.New("etcdserver: request timed out"))}, "", 1},
		{"no outage", nil, "", 0},
		{"forbidden ends it", []error{apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "rr-0", errors.New("no"))}, "forbidden", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(ready)
			calls := 0
			cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= len(c.errs) {
					return true, nil, c.errs[calls-1]
				}
				return false, nil, nil
			})
			var lines []string
			cl := &Cluster{Kube: cs, Namespace: "team"}
			err := cl.waitDeploymentReady(context.Background(), "rr-0", 2, RollOptions{ReplicaTimeout: 5 * time.Second, Poll: time.Millisecond,
				Progress: func(l string) { lines = append(lines, l) }})
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			n := 0
			for _, l := range lines {
				if strings.Contains(l, "the API server does not answer") {
					n++
				}
			}
			if n != c.outages {
				t.Errorf("%d outage line(s), want %d: %q", n, c.outages, lines)
			}
		})
	}
}

// Without an answer until the replica's timeout, the wait ends with a timeout that says why.
func TestWaitDeploymentReadyOutageTimesOut(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("dial tcp 127.0.0.1:6443: connect: %w", syscall.ECONNREFUSED)
	})
	cl := &Cluster{Kube: cs, Namespace: "team"}
	err := cl.waitDeploymentReady(context.Background(), "rr-0", 2, RollOptions{ReplicaTimeout: 50 * time.Millisecond, Poll: time.Millisecond})
	var te *WaitTimeoutError
	if !errors.As(err, &te) || !strings.Contains(te.Last, "the API server does not answer") {
		t.Fatalf("%v", err)
	}
}

// A route the Gateway has not judged yet keeps the wait going once the replicas are ready; its
// timeout says it was the Gateway that was awaited.
func TestWaitGatewayTimesOut(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	state := clusterState(t, objs, "")
	state = state[:len(state)-1]
	cl := gatewayCluster(t, true, []runtime.Object{gatewayFor(objs, "203.0.113.7"), routeWith(objs, 0)})
	cl.Kube = fake.NewClientset(state...)
	_, err := cl.WaitReady(context.Background(), WaitOptions{Name: "qwen", Model: "m", Timeout: 50 * time.Millisecond, Poll: time.Millisecond,
		Connect: func(context.Context, *ServingStatus) (*openaiclient.Client, error) { return nil, errors.New("no") }})
	var te *WaitTimeoutError
	if !errors.As(err, &te) || !te.Gateway || !strings.Contains(te.Last, "waiting for the Gateway") {
		t.Fatalf("%#v", err)
	}
}
