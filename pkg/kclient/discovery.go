package kclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Discovery is the part of client-go's discovery.DiscoveryInterface that ain uses; client-go's
// discovery clients (fake ones included) implement it.
type Discovery interface {
	ServerGroups() (*metav1.APIGroupList, error)
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
	ServerVersion() (*version.Info, error)
}

// GroupDiscoveryFailedError is client-go's ErrGroupDiscoveryFailed: some group versions could
// not be read; the lists returned with it hold the others.
type GroupDiscoveryFailedError struct {
	Groups map[schema.GroupVersion]error
}

func (e *GroupDiscoveryFailedError) Error() string {
	var groups []string
	for k, v := range e.Groups {
		groups = append(groups, fmt.Sprintf("%s: %v", k, v))
	}
	sort.Strings(groups)
	return "unable to retrieve the complete list of server APIs: " + strings.Join(groups, ", ")
}

var errBurst = errors.New("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")

func newRateLimiter(qps float32, burst int) flowcontrol.RateLimiter {
	return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}

// Discovery defaults as client-go's discovery client sets them.
const (
	discoveryTimeout = 32 * time.Second
	discoveryBurst   = 300
	discoveryRetries = 2
	// Aggregated discovery v2 (GA in Kubernetes 1.30): one answer per /api and /apis holds every
	// group version's resources. Older servers answer the legacy form, and each group version
	// is then asked for separately, as client-go does. (v2beta1, 1.26 to 1.29, is not asked for:
	// those servers also answer the legacy form.)
	acceptDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)

type discoveryClient struct {
	rc rest.Interface
}

// NewDiscoveryForConfig is discovery.NewDiscoveryClientForConfig.
func NewDiscoveryForConfig(c *rest.Config) (Discovery, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	h, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return newDiscoveryForConfigAndClient(&cfg, h)
}

func newDiscoveryForConfigAndClient(c *rest.Config, h *http.Client) (*discoveryClient, error) {
	buildScheme()
	cfg := *c
	cfg.APIPath, cfg.GroupVersion = "", nil
	if cfg.Timeout == 0 {
		cfg.Timeout = discoveryTimeout
	}
	if cfg.Burst == 0 {
		cfg.Burst = discoveryBurst
	}
	codec := runtime.NoopEncoder{Decoder: codecs.UniversalDecoder()}
	cfg.NegotiatedSerializer = serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{Serializer: codec})
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	return &discoveryClient{rc: rc}, nil
}

// ServerVersion is GET /version.
func (d *discoveryClient) ServerVersion() (*version.Info, error) {
	body, err := d.rc.Get().AbsPath("/version").Do(context.TODO()).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("unable to parse the server version: %v", err)
	}
	return &info, nil
}

// ServerResourcesForGroupVersion is GET /api/v1 or /apis/<group>/<version>.
func (d *discoveryClient) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if gv == "" {
		return nil, errors.New("groupVersion shouldn't be empty")
	}
	path := "/apis/" + gv
	if gv == "v1" {
		path = "/api/v1"
	}
	l := &metav1.APIResourceList{GroupVersion: gv}
	if err := d.rc.Get().AbsPath(path).Do(context.TODO()).Into(l); err != nil {
		if gv == "v1" && apierrors.IsNotFound(err) {
			return l, nil // as client-go: core/v1 not found is an empty list
		}
		return nil, err
	}
	return l, nil
}

// ServerGroups is the groups of /api and /apis, the legacy core group first.
func (d *discoveryClient) ServerGroups() (*metav1.APIGroupList, error) {
	groups, _, _, err := d.groupsAndMaybeResources()
	return groups, err
}

// ServerGroupsAndResources is every group and the resources of each group version. With an
// error, the lists hold what could be read; a *GroupDiscoveryFailedError names the rest. It
// tries twice when some group versions failed, as client-go does.
func (d *discoveryClient) ServerGroupsAndResources() (groups []*metav1.APIGroup, lists []*metav1.APIResourceList, err error) {
	for range discoveryRetries {
		groups, lists, err = d.serverGroupsAndResources()
		if _, partial := err.(*GroupDiscoveryFailedError); err == nil || !partial {
			break
		}
	}
	if err != nil {
		if _, partial := err.(*GroupDiscoveryFailedError); !partial {
			return nil, nil, err
		}
	}
	return groups, lists, err
}

func (d *discoveryClient) serverGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	sgs, byGV, failed, err := d.groupsAndMaybeResources()
	if sgs == nil {
		return nil, nil, err
	}
	groups := make([]*metav1.APIGroup, 0, len(sgs.Groups))
	for i := range sgs.Groups {
		groups = append(groups, &sgs.Groups[i])
	}
	if byGV == nil { // legacy discovery: ask each group version
		byGV, failed = d.fetchGroupVersions(sgs)
	}
	var lists []*metav1.APIResourceList
	for _, g := range sgs.Groups { // in discovery order
		for _, v := range g.Versions {
			if l, ok := byGV[schema.GroupVersion{Group: g.Name, Version: v.Version}]; ok {
				lists = append(lists, l)
			}
		}
	}
	if len(failed) > 0 {
		return groups, lists, &GroupDiscoveryFailedError{Groups: failed}
	}
	return groups, lists, nil
}

func (d *discoveryClient) fetchGroupVersions(sgs *metav1.APIGroupList) (map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error) {
	byGV := map[schema.GroupVersion]*metav1.APIResourceList{}
	failed := map[schema.GroupVersion]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range sgs.Groups {
		for _, v := range g.Versions {
			gv := schema.GroupVersion{Group: g.Name, Version: v.Version}
			wg.Go(func() {
				l, err := d.ServerResourcesForGroupVersion(gv.String())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[gv] = err
				}
				if l != nil {
					byGV[gv] = l
				}
			})
		}
	}
	wg.Wait()
	return byGV, failed
}

// groupsAndMaybeResources reads /api then /apis. The resources are nil unless both answered in
// the aggregated form; failed holds the group versions marked stale.
func (d *discoveryClient) groupsAndMaybeResources() (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	groups, byGV, failed, err := d.download("/api")
	if err != nil {
		if !apierrors.IsNotFound(err) { // aggregated API servers may serve no /api
			return nil, nil, nil, err
		}
		groups, byGV, failed = &metav1.APIGroupList{}, map[schema.GroupVersion]*metav1.APIResourceList{}, map[schema.GroupVersion]error{}
	}
	apiGroups, apiByGV, apiFailed, err := d.download("/apis")
	if err != nil {
		return nil, nil, nil, err
	}
	groups.Groups = append(groups.Groups, apiGroups.Groups...)
	if byGV != nil && apiByGV != nil {
		for gv, l := range apiByGV {
			byGV[gv] = l
		}
	} else {
		byGV = nil
	}
	for gv, e := range apiFailed {
		failed[gv] = e
	}
	return groups, byGV, failed, nil
}

// download reads one discovery document, aggregated (groups with their resources) or legacy
// (/api's APIVersions or /apis's APIGroupList: resources nil).
func (d *discoveryClient) download(path string) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	var contentType string
	body, err := d.rc.Get().AbsPath(path).SetHeader("Accept", acceptDiscovery).Do(context.TODO()).ContentType(&contentType).Raw()
	if err != nil {
		return nil, nil, nil, err
	}
	failed := map[schema.GroupVersion]error{}
	if isAggregatedV2(contentType) {
		var agg apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &agg); err != nil {
			return nil, nil, nil, err
		}
		groups, byGV := splitAggregated(agg, failed)
		return groups, byGV, failed, nil
	}
	groups := &metav1.APIGroupList{}
	if path == "/api" {
		var v metav1.APIVersions
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, nil, nil, err
		}
		g := metav1.APIGroup{}
		for _, ver := range v.Versions {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: ver, Version: ver})
		}
		if len(g.Versions) > 0 {
			g.PreferredVersion = g.Versions[0]
		}
		groups.Groups = []metav1.APIGroup{g}
		return groups, nil, failed, nil
	}
	if err := json.Unmarshal(body, groups); err != nil {
		return nil, nil, nil, err
	}
	return groups, nil, failed, nil
}

func isAggregatedV2(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
}

// StaleGroupVersionError is a group version that aggregated discovery marks stale (its
// aggregated API server did not answer the main one).
type StaleGroupVersionError struct{ GV schema.GroupVersion }

func (e StaleGroupVersionError) Error() string {
	return fmt.Sprintf("stale GroupVersion discovery: %v", e.GV)
}

// splitAggregated turns aggregated discovery into groups and per-group-version resource lists
// as the legacy endpoints would have listed them: subresources as "resource/sub", stale group
// versions left out and recorded in failed, resources without a kind left out.
func splitAggregated(agg apidiscoveryv2.APIGroupDiscoveryList, failed map[schema.GroupVersion]error) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList) {
	groups := &metav1.APIGroupList{Groups: make([]metav1.APIGroup, 0, len(agg.Items))}
	byGV := map[schema.GroupVersion]*metav1.APIResourceList{}
	for _, ag := range agg.Items {
		g := metav1.APIGroup{Name: ag.Name}
		for _, v := range ag.Versions {
			gv := schema.GroupVersion{Group: ag.Name, Version: v.Version}
			if v.Freshness == apidiscoveryv2.DiscoveryFreshnessStale {
				failed[gv] = StaleGroupVersionError{GV: gv}
				continue
			}
			ver := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: v.Version}
			g.Versions = append(g.Versions, ver)
			if g.PreferredVersion == (metav1.GroupVersionForDiscovery{}) {
				g.PreferredVersion = ver // the first fresh version
			}
			l := &metav1.APIResourceList{GroupVersion: gv.String()}
			for _, r := range v.Resources {
				res := metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: r.Scope == apidiscoveryv2.ScopeNamespace,
					Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories}
				hasKind := r.ResponseKind != nil && *r.ResponseKind != (metav1.GroupVersionKind{})
				if hasKind {
					res.Group, res.Version, res.Kind = r.ResponseKind.Group, r.ResponseKind.Version, r.ResponseKind.Kind
					l.APIResources = append(l.APIResources, res)
				}
				for _, s := range r.Subresources {
					if s.ResponseKind == nil || *s.ResponseKind == (metav1.GroupVersionKind{}) {
						continue
					}
					l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Resource + "/" + s.Subresource, SingularName: res.SingularName,
						Namespaced: res.Namespaced, Group: s.ResponseKind.Group, Version: s.ResponseKind.Version, Kind: s.ResponseKind.Kind, Verbs: s.Verbs})
				}
			}
			byGV[gv] = l
		}
		groups.Groups = append(groups.Groups, g)
	}
	return groups, byGV
}
