package vllm

import (
	"context"
	"errors"
	"github.com/ain-hpc/ain/pkg/next"
	"sort"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/recipe"
)

func TestIngressClassWarning(t *testing.T) {
	for _, tc := range []struct {
		class, controller string
		warn              bool
	}{
		{"nginx", "", false},
		{"nginx", IngressNginxController, false},
		{"public", IngressNginxController, false},
		{"nginx", "nginx.org/ingress-controller", true}, // F5's NGINX Ingress Controller: nginx.org/ annotations
		{"traefik", "", true},
		{"traefik", "traefik.io/ingress-controller", true},
	} {
		w := IngressClassWarning(tc.class, tc.controller)
		// Exactly one of the two: the retirement note for ingress-nginx, the warning otherwise.
		if n := IngressNginxNote(tc.class, tc.controller); (n != "") == tc.warn || (n != "" && !strings.Contains(n, "retired in March 2026")) {
			t.Errorf("%s/%s: note %q", tc.class, tc.controller, n)
		}
		if (w != "") != tc.warn {
			t.Errorf("%s/%s: %q", tc.class, tc.controller, w)
			continue
		}
		if w == "" {
			continue
		}
		for _, want := range []string{"IngressClass " + tc.class, "proxy-buffering", "proxy-read-timeout", "proxy-send-timeout", "proxy-body-size", "cut at the controller's default", "--expose gateway"} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: %q lacks %q", tc.class, w, want)
			}
		}
	}
}

func cond(t string, status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// gatewayFor is the Gateway objs renders, as its controller leaves it: accepted, programmed,
// with addr published (none when empty).
func gatewayFor(objs *Objects, addr string) *gatewayv1.Gateway {
	gw := objs.Gateway.DeepCopy()
	gw.Status.Conditions = []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", "", 1), cond("Programmed", metav1.ConditionTrue, "Programmed", "", 1)}
	if addr != "" {
		ip := gatewayv1.IPAddressType
		gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: addr}}
	}
	return gw
}

// routeWith is the route objs renders with its controller's report for its parent.
func routeWith(objs *Objects, gen int64, conds ...metav1.Condition) *gatewayv1.HTTPRoute {
	rt := objs.HTTPRoute.DeepCopy()
	rt.Generation = gen
	if len(conds) > 0 {
		rt.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: rt.Spec.ParentRefs[0], ControllerName: "example.com/gw", Conditions: conds}}
	}
	return rt
}

// The route's state as `ain serve status` and the wait read it: accepted and addressed is a URL;
// a rejection is a problem to fix (not waited on) with the controller's reason; no report yet,
// a stale report or no address is pending.
func TestRouteStatus(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	ok := []metav1.Condition{cond("Accepted", metav1.ConditionTrue, "Accepted", "", 1), cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", "", 1)}
	for _, tc := range []struct {
		name    string
		rt      *gatewayv1.HTTPRoute
		gw      *gatewayv1.Gateway
		gwErr   error
		problem string
		pending bool
		url     string
	}{
		{"serving", routeWith(objs, 1, ok...), gatewayFor(objs, "203.0.113.7"), nil, "", false, "https://llm.course.example"},
		{"no report", routeWith(objs, 1), gatewayFor(objs, "203.0.113.7"), nil, "no Gateway controller has reported on it for Gateway llm/qwen (listener https) yet: is the controller of GatewayClass eg running?", true, "https://llm.course.example"},
		{"stale", routeWith(objs, 2, ok...), gatewayFor(objs, "203.0.113.7"), nil, "has not seen its generation 2 yet (its status is of 1)", true, "https://llm.course.example"},
		{"refused", routeWith(objs, 1, cond("Accepted", metav1.ConditionFalse, "NotAllowedByListeners", "no listener admits namespace llm", 1), ok[1]), gatewayFor(objs, "203.0.113.7"), nil,
			"HTTPRoute qwen is not accepted by Gateway llm/qwen (listener https): NotAllowedByListeners: no listener admits namespace llm", false, "https://llm.course.example"},
		{"backend missing", routeWith(objs, 1, ok[0], cond("ResolvedRefs", metav1.ConditionFalse, "BackendNotFound", "service llm/qwen not found", 1)), gatewayFor(objs, "203.0.113.7"), nil,
			"its references do not resolve: BackendNotFound: service llm/qwen not found", false, "https://llm.course.example"},
		{"no address", routeWith(objs, 1, ok...), gatewayFor(objs, ""), nil, "Gateway llm/qwen (listener https) has not published an address yet", true, "https://llm.course.example"},
		{"gateway gone", routeWith(objs, 1, ok...), nil, apierrors.NewNotFound(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "gateways"}, "qwen"), "its Gateway llm/qwen (listener https) does not exist", false, "https://llm.course.example"},
		{"gateway unreadable", routeWith(objs, 1, ok...), nil, apierrors.NewForbidden(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "gateways"}, "qwen", errors.New("no")), "", false, "https://llm.course.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, url, addr, secret := routeStatus(tc.rt, tc.gw, tc.gwErr)
			if tc.problem == "" && rs.Problem != "" || tc.problem != "" && !strings.Contains(rs.Problem, tc.problem) || rs.Pending != tc.pending {
				t.Errorf("problem %q pending %v, want %q pending %v", rs.Problem, rs.Pending, tc.problem, tc.pending)
			}
			if url != tc.url {
				t.Errorf("url %q, want %q", url, tc.url)
			}
			if tc.gw != nil && (!rs.OwnGateway || secret != "qwen-tls") {
				t.Errorf("own gateway %v secret %q", rs.OwnGateway, secret)
			}
			if tc.name == "serving" && (addr != "203.0.113.7" || rs.Accepted != "True" || rs.ResolvedRefs != "True") {
				t.Errorf("address %q accepted %q resolved %q", addr, rs.Accepted, rs.ResolvedRefs)
			}
		})
	}
	// A listener on another port than 443 is in the URL and the address; a host-less route is
	// reached at the Gateway's address.
	gw := gatewayFor(objs, "gw.example.net")
	gw.Spec.Listeners[0].Port = 8443
	rt := routeWith(objs, 1, ok...)
	rt.Spec.Hostnames = nil
	if _, url, addr, _ := routeStatus(rt, gw, nil); url != "https://gw.example.net:8443" || addr != "gw.example.net:8443" {
		t.Errorf("url %q addr %q", url, addr)
	}
	// A shared Gateway is not ain's, and its certificate is not ain's to read.
	gw.Labels = nil
	if rs, _, _, secret := routeStatus(rt, gw, nil); rs.OwnGateway || secret != "" {
		t.Errorf("shared gateway: own %v secret %q", rs.OwnGateway, secret)
	}
	e := &RouteError{Server: "qwen", Route: RouteStatus{Name: "qwen", Accepted: "False: NotAllowedByListeners: x"}}
	if h := e.Hint(func(c next.Command) string { return "ain " + string(c) }); !strings.Contains(h, "allowedRoutes") {
		t.Errorf("hint %q", h)
	}
}

// gatewayCluster is a fake cluster that serves the Gateway API (or not), with objs' objects
// and the GatewayClasses given.
func gatewayCluster(t *testing.T, served bool, objs []runtime.Object, classes ...*gatewayv1.GatewayClass) *Cluster {
	t.Helper()
	kube := fake.NewClientset()
	if served {
		kube.Resources = []*metav1.APIResourceList{{GroupVersion: GatewayAPIGroupVersion, APIResources: []metav1.APIResource{
			{Name: "httproutes", Namespaced: true, Kind: "HTTPRoute"}, {Name: "gateways", Namespaced: true, Kind: "Gateway"}, {Name: "gatewayclasses", Kind: "GatewayClass"}}}}
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		httpRoutesGVR: "HTTPRouteList", gatewaysGVR: "GatewayList", gatewayClassesGVR: "GatewayClassList",
		servingGVRs["Deployment"]: "DeploymentList", servingGVRs["Service"]: "ServiceList", servingGVRs["Ingress"]: "IngressList",
		servingGVRs["Secret"]: "SecretList", servingGVRs["PodDisruptionBudget"]: "PodDisruptionBudgetList",
	})
	// Created with their resource named: the fake's guess from the kind makes "gatewaies".
	create := func(o runtime.Object) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		gvr, ok := servingGVRs[u.GetKind()]
		if u.GetKind() == "GatewayClass" {
			gvr, ok = gatewayClassesGVR, true
		}
		if !ok {
			t.Fatalf("no resource for %s", u.GetKind())
		}
		ri := dyn.Resource(gvr).Namespace(u.GetNamespace())
		if u.GetNamespace() == "" {
			_, err = dyn.Resource(gvr).Create(context.Background(), u, metav1.CreateOptions{})
		} else {
			_, err = ri.Create(context.Background(), u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if ing, ok := o.(*networkingv1.Ingress); ok {
			if _, err := kube.NetworkingV1().Ingresses(ing.Namespace).Create(context.Background(), ing, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		create(o)
	}
	for _, c := range classes {
		c := c.DeepCopy()
		c.APIVersion, c.Kind = GatewayAPIGroupVersion, "GatewayClass"
		create(c)
	}
	return &Cluster{Kube: kube, Dynamic: dyn, Namespace: "llm"}
}

// withDeployment adds a running replica of model server qwen to cl.
func withDeployment(t *testing.T, cl *Cluster) *Cluster {
	t.Helper()
	d := servingObjects(t).Deployments[0]
	if _, err := cl.Kube.AppsV1().Deployments("llm").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cl
}

func gatewayClass(name string, accepted bool, features ...gatewayv1.FeatureName) *gatewayv1.GatewayClass {
	gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/" + gatewayv1.GatewayController(name)}}
	status := metav1.ConditionFalse
	if accepted {
		status = metav1.ConditionTrue
	}
	gc.Status.Conditions = []metav1.Condition{cond("Accepted", status, "Accepted", "", 1)}
	for _, f := range features {
		gc.Status.SupportedFeatures = append(gc.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: f})
	}
	return gc
}

// ChooseEntry: an explicit choice wins; auto keeps what a model server has, and gives a new one
// the Gateway API only when the cluster serves it and ain knows which Gateway to use.
func TestChooseEntry(t *testing.T) {
	ctx := context.Background()
	auto := func(t *testing.T, sets ...string) *recipe.ServingSpec {
		t.Helper()
		r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), append([]string{"expose=auto"}, sets...))
		if err != nil {
			t.Fatal(err)
		}
		return r.Serving
	}
	ingObjs := servingObjects(t)
	gwObjs := servingObjects(t, gatewaySets...)
	for _, tc := range []struct {
		name     string
		cl       *Cluster
		spec     *recipe.ServingSpec
		kind     string
		class    string
		why      string
		warnings string
	}{
		{"not served", gatewayCluster(t, false, nil), auto(t), recipe.ExposeIngress, "", "the cluster does not serve the Gateway API", ""},
		{"one accepted class", gatewayCluster(t, true, nil, gatewayClass("eg", true), gatewayClass("old", false)), auto(t), recipe.ExposeGateway, "eg", "GatewayClass eg is its only accepted class", ""},
		{"two accepted", gatewayCluster(t, true, nil, gatewayClass("eg", true), gatewayClass("istio", true)), auto(t), recipe.ExposeIngress, "", "several GatewayClasses are accepted (eg, istio)", ""},
		{"none accepted", gatewayCluster(t, true, nil, gatewayClass("eg", false)), auto(t), recipe.ExposeIngress, "", "no GatewayClass is accepted by a controller (eg", ""},
		{"keeps its ingress", gatewayCluster(t, true, []runtime.Object{ingObjs.Ingress}, gatewayClass("eg", true)), auto(t), recipe.ExposeIngress, "", "already has Ingress qwen, and a re-run keeps its entry", ""},
		{"keeps its route", gatewayCluster(t, true, []runtime.Object{gwObjs.Gateway, gwObjs.HTTPRoute}, gatewayClass("eg", true), gatewayClass("istio", true)), auto(t), recipe.ExposeGateway, "eg", "already has HTTPRoute qwen", ""},
		{"recipe names a class", gatewayCluster(t, true, nil, gatewayClass("eg", true, "HTTPRoute")), auto(t, "gateway.className=eg"), recipe.ExposeGateway, "eg", "spec.gateway names GatewayClass eg",
			"does not list HTTPRouteRequestTimeout and HTTPRouteBackendTimeout among its supportedFeatures"},
		{"keeps none", withDeployment(t, gatewayCluster(t, true, nil, gatewayClass("eg", true))), auto(t), recipe.ExposeNone, "", "runs without an entry (the Service only), and a re-run keeps it so", ""},
		{"explicit ingress", gatewayCluster(t, true, []runtime.Object{gwObjs.HTTPRoute}, gatewayClass("eg", true)), auto(t, "expose=ingress"), recipe.ExposeIngress, "", "spec.expose", ""},
		{"explicit gateway, class found", gatewayCluster(t, true, []runtime.Object{ingObjs.Ingress}, gatewayClass("eg", true)), auto(t, "expose=gateway"), recipe.ExposeGateway, "eg", "the cluster's only accepted class", ""},
		{"class not accepted", gatewayCluster(t, true, nil, gatewayClass("eg", false)), auto(t, "expose=gateway", "gateway.className=eg"), recipe.ExposeGateway, "eg", "", "GatewayClass eg is not accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.cl.ChooseEntry(ctx, tc.spec, "qwen", "spec.expose "+tc.spec.Expose)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tc.kind || e.Spec.Expose != tc.kind || !strings.Contains(e.Why, tc.why) {
				t.Errorf("%s (%s), want %s (%s)", e.Kind, e.Why, tc.kind, tc.why)
			}
			if tc.kind == recipe.ExposeGateway && (e.Spec.Gateway == nil || e.Spec.Gateway.ClassName != tc.class || e.Spec.Ingress != nil) {
				t.Errorf("gateway %+v ingress %+v, want class %s", e.Spec.Gateway, e.Spec.Ingress, tc.class)
			}
			if tc.kind == recipe.ExposeIngress && (e.Spec.Ingress == nil || e.Spec.Gateway != nil) {
				t.Errorf("ingress %+v gateway %+v", e.Spec.Ingress, e.Spec.Gateway)
			}
			if w := strings.Join(e.Warnings, "\n"); tc.warnings == "" && w != "" || !strings.Contains(w, tc.warnings) {
				t.Errorf("warnings %q, want %q", w, tc.warnings)
			}
		})
	}
	// What cannot be done is an error naming why, never a silent fallback.
	var missing *GatewayAPIMissingError
	if _, err := gatewayCluster(t, false, nil).ChooseEntry(ctx, auto(t, "expose=gateway", "gateway.className=eg"), "qwen", "--expose gateway"); !errors.As(err, &missing) || !strings.Contains(err.Error(), "--expose gateway: the cluster does not serve the Gateway API") {
		t.Errorf("not served: %v", err)
	}
	var choice *GatewayChoiceError
	if _, err := gatewayCluster(t, true, nil, gatewayClass("a", true), gatewayClass("b", true)).ChooseEntry(ctx, auto(t, "expose=gateway"), "qwen", "--expose gateway"); !errors.As(err, &choice) || !strings.Contains(err.Error(), "several GatewayClasses are accepted (a, b)") {
		t.Errorf("no class: %v", err)
	}
	var unknown *UnknownGatewayError
	if _, err := gatewayCluster(t, true, nil, gatewayClass("eg", true)).ChooseEntry(ctx, auto(t, "expose=gateway", "gateway.className=envoy"), "qwen", "--gateway-class envoy"); !errors.As(err, &unknown) || err.Error() != "GatewayClass envoy does not exist (the cluster has: eg)" {
		t.Errorf("unknown class: %v", err)
	}
	if _, err := gatewayCluster(t, true, nil).ChooseEntry(ctx, auto(t, "expose=gateway", "gateway.name=public", "gateway.namespace=infra"), "qwen", "--gateway infra/public"); !errors.As(err, &unknown) || !strings.Contains(err.Error(), "Gateway infra/public does not exist") {
		t.Errorf("unknown gateway: %v", err)
	}
}

// A shared Gateway with a plain-HTTP listener: the route is pinned to its one HTTPS listener
// (the key never travels in clear text), or, with several, the user is told to name one.
func TestSharedGatewayHTTPSListener(t *testing.T) {
	ctx := context.Background()
	gw := func(listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{TypeMeta: metav1.TypeMeta{APIVersion: GatewayAPIGroupVersion, Kind: "Gateway"},
			ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: "llm"},
			Spec:       gatewayv1.GatewaySpec{GatewayClassName: "eg", Listeners: listeners}}
	}
	http := gatewayv1.Listener{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}
	https := gatewayv1.Listener{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443}
	https2 := gatewayv1.Listener{Name: "https-alt", Protocol: gatewayv1.HTTPSProtocolType, Port: 8443}
	spec := func() *recipe.ServingSpec {
		r, err := recipe.Parse("qwen.yaml", []byte(servingRecipe), []string{"expose=gateway", "gateway.name=public"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Serving
	}
	e, err := gatewayCluster(t, true, []runtime.Object{gw(http, https)}, gatewayClass("eg", true)).ChooseEntry(ctx, spec(), "qwen", "--gateway public")
	if err != nil {
		t.Fatal(err)
	}
	if e.Spec.Gateway.SectionName != "https" || !strings.Contains(strings.Join(e.Notes, "\n"), "clear text") {
		t.Errorf("section %q notes %q", e.Spec.Gateway.SectionName, e.Notes)
	}
	e, err = gatewayCluster(t, true, []runtime.Object{gw(http, https, https2)}, gatewayClass("eg", true)).ChooseEntry(ctx, spec(), "qwen", "--gateway public")
	if err != nil {
		t.Fatal(err)
	}
	if e.Spec.Gateway.SectionName != "" || !strings.Contains(strings.Join(e.Warnings, "\n"), "--gateway NS/NAME:LISTENER") {
		t.Errorf("several HTTPS listeners: section %q warnings %q", e.Spec.Gateway.SectionName, e.Warnings)
	}
}

// Applying a Gateway API entry and deleting it: the route and ain's Gateway go with the model
// server; a shared Gateway the route attached to is never touched; a switch to an Ingress
// prunes them.
func TestGatewayApplyPruneDelete(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	shared := &gatewayv1.Gateway{TypeMeta: metav1.TypeMeta{APIVersion: GatewayAPIGroupVersion, Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: "llm", Labels: map[string]string{"team": "platform"}}}
	// As applied (the fake has no server-side apply: created).
	cl := gatewayCluster(t, true, append([]runtime.Object{shared}, objs.All()...))
	ctx := context.Background()
	// Switched to an Ingress: the route and ain's Gateway are pruned.
	ing := servingObjects(t)
	pruned, err := cl.Prune(ctx, "qwen", ing.All())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pruned, " "); got != "Gateway/qwen HTTPRoute/qwen" {
		t.Errorf("pruned %s", got)
	}
	// A route on the shared Gateway, then delete: the route goes, the shared Gateway stays.
	onShared := servingObjects(t, "expose=gateway", "gateway.name=public")
	cl = gatewayCluster(t, true, append([]runtime.Object{shared}, onShared.All()...))
	gone, err := cl.Delete(ctx, "qwen")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(gone)
	if got := strings.Join(gone, " "); strings.Contains(got, "Gateway/") || !strings.Contains(got, "HTTPRoute/qwen") {
		t.Errorf("deleted %s", got)
	}
	if _, err := cl.Dynamic.Resource(gatewaysGVR).Namespace("llm").Get(ctx, "public", metav1.GetOptions{}); err != nil {
		t.Errorf("the shared Gateway was deleted: %v", err)
	}
}

// A route its Gateway refuses ends the wait with the controller's reason once the replicas are
// ready, instead of waiting for the timeout.
func TestWaitRouteRefused(t *testing.T) {
	objs := servingObjects(t, gatewaySets...)
	state := clusterState(t, objs, "")
	state = state[:len(state)-1] // clusterState adds objs.Ingress, nil here
	cl := gatewayCluster(t, true, []runtime.Object{gatewayFor(objs, "203.0.113.7"),
		routeWith(objs, 0, cond("Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname", "no listener matches llm.course.example", 0))})
	kube := fake.NewClientset(state...)
	cl.Kube = kube
	connected := false
	_, err := cl.WaitReady(context.Background(), WaitOptions{Name: "qwen", Model: "m", Timeout: time.Minute, Poll: time.Millisecond,
		Connect: func(context.Context, *ServingStatus) (*openaiclient.Client, error) {
			connected = true
			return nil, errors.New("no")
		}})
	var re *RouteError
	if !errors.As(err, &re) || connected || !strings.Contains(err.Error(), "not accepted by Gateway llm/qwen (listener https): NoMatchingListenerHostname: no listener matches llm.course.example") ||
		!strings.Contains(re.Hint(func(c next.Command) string { return "ain " + string(c) }), "hostname") {
		t.Fatalf("connected %v, err %v", connected, err)
	}
}
