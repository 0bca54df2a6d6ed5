package kclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// apiServer answers discovery as a kube-apiserver does: aggregated (v2) when the client accepts
// it and aggregated is true, else the legacy documents. kubeflow.org/v2beta1 is stale (its
// aggregated API server down) in the aggregated form and answers 503 in the legacy one.
type apiServer struct {
	aggregated bool
	requests   atomic.Int64
}

func gvk(g, v, k string) *metav1.GroupVersionKind {
	return &metav1.GroupVersionKind{Group: g, Version: v, Kind: k}
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	agg := s.aggregated && strings.Contains(r.Header.Get("Accept"), "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	reply := func(ct string, v any) {
		w.Header().Set("Content-Type", ct)
		_ = json.NewEncoder(w).Encode(v)
	}
	const aggCT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	pods := apidiscoveryv2.APIResourceDiscovery{Resource: "pods", SingularResource: "pod", Scope: apidiscoveryv2.ScopeNamespace,
		ResponseKind: gvk("", "v1", "Pod"), Verbs: []string{"get", "list", "watch"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "log", ResponseKind: gvk("", "v1", "Pod"), Verbs: []string{"get"}}}}
	pyt := apidiscoveryv2.APIResourceDiscovery{Resource: "pytorchjobs", SingularResource: "pytorchjob", Scope: apidiscoveryv2.ScopeNamespace,
		ResponseKind: gvk("kubeflow.org", "v1", "PyTorchJob"), Verbs: []string{"create", "get"}}
	nodes := apidiscoveryv2.APIResourceDiscovery{Resource: "nodes", SingularResource: "node", Scope: apidiscoveryv2.ScopeCluster,
		ResponseKind: gvk("", "v1", "Node"), Verbs: []string{"get"}}
	switch path := r.URL.Path; {
	case path == "/version":
		reply("application/json", map[string]string{"major": "1", "minor": "33", "gitVersion": "v1.33.1"})
	case path == "/api" && agg:
		reply(aggCT, apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{{
			Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{pods, nodes}}}}}})
	case path == "/apis" && agg:
		reply(aggCT, apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeflow.org"},
			Versions: []apidiscoveryv2.APIVersionDiscovery{
				{Version: "v2beta1", Freshness: apidiscoveryv2.DiscoveryFreshnessStale},
				{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{pyt}},
			}}}})
	case path == "/api":
		reply("application/json", metav1.APIVersions{Versions: []string{"v1"}})
	case path == "/apis":
		reply("application/json", metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "kubeflow.org",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "kubeflow.org/v2beta1", Version: "v2beta1"}, {GroupVersion: "kubeflow.org/v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "kubeflow.org/v1", Version: "v1"}}}})
	case path == "/api/v1":
		reply("application/json", metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "list", "watch"}},
			{Name: "pods/log", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
			{Name: "nodes", SingularName: "node", Kind: "Node", Verbs: []string{"get"}}}})
	case path == "/apis/kubeflow.org/v1":
		reply("application/json", metav1.APIResourceList{GroupVersion: "kubeflow.org/v1", APIResources: []metav1.APIResource{
			{Name: "pytorchjobs", SingularName: "pytorchjob", Namespaced: true, Kind: "PyTorchJob", Verbs: []string{"create", "get"}}}})
	case path == "/apis/kubeflow.org/v2beta1":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: 503, Reason: metav1.StatusReasonServiceUnavailable, Message: "service unavailable"})
	default:
		http.NotFound(w, r)
	}
}

// resourceNames is "groupVersion name kind" per resource, sorted: what discovery's callers read.
func resourceNames(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			out = append(out, l.GroupVersion+" "+r.Name+" "+r.Kind+" "+strings.Join(r.Verbs, ","))
		}
	}
	sort.Strings(out)
	return out
}

func groupNames(groups []*metav1.APIGroup) []string {
	var out []string
	for _, g := range groups {
		var vs []string
		for _, v := range g.Versions {
			vs = append(vs, v.GroupVersion)
		}
		out = append(out, g.Name+"="+strings.Join(vs, ",")+" preferred "+g.PreferredVersion.GroupVersion)
	}
	return out
}

// TestDiscoveryMatchesClientGo asks the same server, aggregated and legacy, through this
// package and through client-go's discovery client: same groups, same resources, the same
// group version reported failed, and the partial answer still returned.
func TestDiscoveryMatchesClientGo(t *testing.T) {
	for _, aggregated := range []bool{true, false} {
		name := "legacy"
		if aggregated {
			name = "aggregated"
		}
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(&apiServer{aggregated: aggregated})
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL}
			ours, err := NewDiscoveryForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			og, ol, oerr := ours.ServerGroupsAndResources()
			tg, tl, terr := theirs.ServerGroupsAndResources()
			var partial *GroupDiscoveryFailedError
			if !errors.As(oerr, &partial) || !discovery.IsGroupDiscoveryFailedError(terr) {
				t.Fatalf("errors: ours %v, client-go %v; want both to name the failed group version", oerr, terr)
			}
			if _, failed := partial.Groups[schema.GroupVersion{Group: "kubeflow.org", Version: "v2beta1"}]; !failed || len(partial.Groups) != 1 {
				t.Errorf("failed group versions %v, want kubeflow.org/v2beta1 only", partial.Groups)
			}
			if o, c := groupNames(og), groupNames(tg); !reflect.DeepEqual(o, c) {
				t.Errorf("groups:\n ours     %q\n client-go %q", o, c)
			}
			if o, c := resourceNames(ol), resourceNames(tl); !reflect.DeepEqual(o, c) || len(o) != 4 {
				t.Errorf("resources:\n ours     %q\n client-go %q", o, c)
			}
			sg, err := ours.ServerGroups()
			cg, cerr := theirs.ServerGroups()
			if err != nil || cerr != nil || !reflect.DeepEqual(sg, cg) {
				t.Errorf("ServerGroups: ours %+v %v, client-go %+v %v", sg, err, cg, cerr)
			}
			v, err := ours.ServerVersion()
			if err != nil || v.GitVersion != "v1.33.1" {
				t.Errorf("ServerVersion: %+v %v", v, err)
			}
			l, err := ours.ServerResourcesForGroupVersion("kubeflow.org/v1")
			if err != nil || len(l.APIResources) != 1 || l.APIResources[0].Name != "pytorchjobs" {
				t.Errorf("ServerResourcesForGroupVersion(kubeflow.org/v1): %+v %v", l, err)
			}
			if _, err := ours.ServerResourcesForGroupVersion("k8s.cni.cncf.io/v1"); err == nil {
				t.Error("ServerResourcesForGroupVersion of a group the server lacks: no error")
			}
		})
	}
}

// TestDiscoveryAggregatedRequests: with aggregated discovery one look at every group's
// resources is two requests (/api, /apis), tried once more when a group version is stale, as
// client-go does; the legacy form costs one request per group version on top.
func TestDiscoveryAggregatedRequests(t *testing.T) {
	for _, c := range []struct {
		aggregated bool
		want       int64
	}{{true, 4}, {false, 10}} {
		s := &apiServer{aggregated: c.aggregated}
		srv := httptest.NewServer(s)
		d, err := NewDiscoveryForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, _, _ = d.ServerGroupsAndResources()
		srv.Close()
		if got := s.requests.Load(); got != c.want {
			t.Errorf("aggregated=%v: %d requests, want %d", c.aggregated, got, c.want)
		}
	}
}
