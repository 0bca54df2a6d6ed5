package vllm

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// clusterState marks a built deployment's pods as the cluster would: pod i of each Deployment
// Running on node gpu-i, ready unless notReady names it.
func clusterState(t *testing.T, objs *Objects, notReady string) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for i, d := range objs.Deployments {
		d := d.DeepCopy()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-abc", Namespace: d.Namespace, Labels: d.Spec.Template.Labels},
			Spec:   corev1.PodSpec{NodeName: "gpu-" + string(rune('0'+i))},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		// As the Deployment controller leaves it once rolled out.
		d.Generation, d.Status.ObservedGeneration = 2, 2
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas = 1, 1, 1
		if d.Name == notReady {
			started := false
			pod.Status.Conditions[0].Status = corev1.ConditionFalse
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Started: &started}}
			d.Status.ReadyReplicas = 0
		}
		out = append(out, d, pod)
	}
	return append(out, objs.Service, objs.Ingress)
}

func TestClusterStatus(t *testing.T) {
	objs := servingObjects(t)
	cl := &Cluster{Kube: fake.NewClientset(clusterState(t, objs, "qwen-1")...), Namespace: "llm"}
	st, err := cl.Status(context.Background(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != 1 || st.Desired != 2 || st.AllReady() || st.URL != "https://llm.course.example" || st.Model != "Qwen2.5-7B-Instruct" ||
		st.Service != "http://qwen.llm.svc:8000" || len(st.Replicas) != 2 {
		t.Fatalf("status %+v", st)
	}
	p := st.Replicas[1].Pods[0]
	if p.Ready || p.Node != "gpu-1" || p.Reason != "loading the model (startup probe on /health not passed yet)" {
		t.Fatalf("pod %+v", p)
	}
	if _, err := cl.Status(context.Background(), "other"); err == nil {
		t.Fatal("no error for a missing model server")
	}
	all, err := cl.List(context.Background(), "")
	if err != nil || len(all) != 1 {
		t.Fatalf("list %v %v", all, err)
	}
}

// TestStatusDuringRollout: right after an apply the Deployments' status still describes the old
// spec, and old ready pods are not the new replicas: neither counts as ready (the "2/2 replicas
// ready" a rollout printed while a replica had only just been applied).
func TestStatusDuringRollout(t *testing.T) {
	objs := servingObjects(t)
	state := clusterState(t, objs, "")
	for _, o := range state {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		switch d.Name {
		case "qwen-0": // applied, not yet observed by the controller
			d.Generation = 3
		case "qwen-1": // new pod created beside the old one, only the old one ready
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas = 2, 1, 1
		}
	}
	cl := &Cluster{Kube: fake.NewClientset(state...), Namespace: "llm"}
	st, err := cl.Status(context.Background(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != 1 || st.AllReady() {
		t.Errorf("ready %d of %d during the rollout, want 1 (qwen-1's updated pod may be the ready one), not all ready", st.Ready, st.Desired)
	}
	if r := st.Replicas[0]; r.Ready != 0 || !strings.Contains(r.Rolling, "has not seen generation 3 yet (status is of 2)") {
		t.Errorf("qwen-0 %+v", r)
	}
	if r := st.Replicas[1]; !strings.Contains(r.Rolling, "1 of 2 pods updated, 1 old still there") {
		t.Errorf("qwen-1 %+v", r)
	}
	if line := ProgressLine(st); !strings.HasPrefix(line, "1/2 replicas ready: ") || !strings.Contains(line, "qwen-0: the Deployment controller has not seen generation 3") {
		t.Errorf("progress line %q", line)
	}
}

func TestClusterApplyAndDelete(t *testing.T) {
	objs := servingObjects(t)
	scheme := runtime.NewScheme()
	var seed []runtime.Object
	for _, o := range objs.All() {
		u, err := jobs.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		seed = append(seed, u)
	}
	// A training job in the same namespace must survive `ain serve delete`.
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("apps/v1")
	job.SetKind("Deployment")
	job.SetName("other")
	job.SetNamespace("llm")
	job.SetLabels(map[string]string{jobs.LabelRun: "qwen", jobs.LabelManagedBy: jobs.ManagedByAin})
	seed = append(seed, job)
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		servingGVRs["Deployment"]: "DeploymentList", servingGVRs["Service"]: "ServiceList",
		servingGVRs["Ingress"]: "IngressList", servingGVRs["Secret"]: "SecretList",
		servingGVRs["PodDisruptionBudget"]: "PodDisruptionBudgetList", servingGVRs["Gateway"]: "GatewayList",
		servingGVRs["HTTPRoute"]: "HTTPRouteList",
	}, seed...)
	var applied []string
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if pa.GetPatchType() != types.ApplyPatchType {
			t.Errorf("patch type %s", pa.GetPatchType())
		}
		applied = append(applied, pa.GetResource().Resource+"/"+pa.GetName())
		u := &unstructured.Unstructured{}
		_ = u.UnmarshalJSON(pa.GetPatch())
		return true, u, nil
	})
	cl := &Cluster{Dynamic: dyn, Namespace: "llm"}
	if _, err := cl.Apply(context.Background(), objs.All(), true); err != nil {
		t.Fatal(err)
	}
	if len(applied) != 5 || applied[0] != "deployments/qwen-0" || applied[3] != "poddisruptionbudgets/qwen" || applied[4] != "ingresses/qwen" {
		t.Fatalf("applied %v", applied)
	}
	gone, err := cl.Delete(context.Background(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(gone)
	// The PDB goes with the server (it is one of its objects, pruned and deleted like them).
	want := "[Deployment/qwen-0 Deployment/qwen-1 Ingress/qwen PodDisruptionBudget/qwen Service/qwen]"
	if got := fmtList(gone); got != want {
		t.Fatalf("deleted %s, want %s", got, want)
	}
	if _, err := cl.Delete(context.Background(), "qwen"); !errors.As(err, new(*NotFoundError)) {
		t.Fatalf("deleting twice: %v, want a NotFoundError", err)
	}
	// A refused call says what it was doing, for the caller's message.
	dyn.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "", errors.New("RBAC"))
	})
	var ce *ClusterError
	if _, err := cl.Delete(context.Background(), "qwen"); !errors.As(err, &ce) || ce.Doing != "deleting the model server" || !apierrors.IsForbidden(err) {
		t.Fatalf("forbidden: %v, want a ClusterError deleting the model server", err)
	}
}

func fmtList(s []string) string { return "[" + strings.Join(s, " ") + "]" }

func TestDiscovery(t *testing.T) {
	objs := servingObjects(t)
	var log strings.Builder
	d := &Discovery{
		Cluster:   &Cluster{Kube: fake.NewClientset(clusterState(t, objs, "")...), Namespace: "llm"},
		Reachable: func(context.Context, Endpoint) error { return nil },
		Log:       &log,
	}
	ep, err := d.Endpoint(context.Background(), "")
	ep.Stop()
	if err != nil || ep.URL != "https://llm.course.example" || ep.Via != "ingress" || !strings.Contains(log.String(), "the ingress of model server qwen") {
		t.Fatalf("%+v %v %s", ep, err, log.String())
	}
	// Ingress unreachable from here, no replica ready: an explained error.
	d.Cluster.Kube = fake.NewClientset(clusterState(t, objs, "qwen-0")...)
	for _, p := range clusterState(t, objs, "qwen-1") {
		if pod, ok := p.(*corev1.Pod); ok && pod.Name == "qwen-1-abc" {
			_, _ = d.Cluster.Kube.CoreV1().Pods("llm").Update(context.Background(), pod, metav1.UpdateOptions{})
		}
	}
	d.Reachable = func(context.Context, Endpoint) error { return context.DeadlineExceeded }
	// Without --port-forward, an unreachable ingress is the error: no silent fallback to a
	// path that measures something else.
	var ie *IngressUnreachableError
	if _, err = d.Endpoint(context.Background(), ""); !errors.As(err, &ie) || ie.URL != "https://llm.course.example" {
		t.Fatalf("no port-forward allowed: %v", err)
	}
	d.AllowPortForward = true
	_, err = d.Endpoint(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "has no ready replica") || !strings.Contains(log.String(), "does not answer from here") {
		t.Fatalf("%v\n%s", err, log.String())
	}
	// Nothing deployed.
	d.Cluster.Kube = fake.NewClientset()
	if _, err := d.Endpoint(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "no model server deployed in namespace llm") {
		t.Fatalf("%v", err)
	}
}

// authCluster is a fake cluster in namespace llm holding objs (a narrow unit test: the
// re-run through a real API server is in the integration tests).
func authCluster(objs ...runtime.Object) *Cluster {
	return &Cluster{Kube: fake.NewClientset(objs...), Namespace: "llm"}
}

func keySecret(name, key, value string, ours bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm"}, Data: map[string][]byte{key: []byte(value)}}
	if ours {
		s.Labels = map[string]string{jobs.LabelManagedBy: jobs.ManagedByAin, jobs.LabelRun: "qwen"}
	}
	return s
}

// liveDeployment is a running server's Deployment whose vLLM reads its key from secret.
func liveDeployment(secret string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: "llm", Labels: Selector("qwen")}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: ContainerName, Env: []corev1.EnvVar{{Name: "VLLM_API_KEY",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "k"}}}}}}
	return d
}

func TestResolveAuth(t *testing.T) {
	ctx := context.Background()
	random := bytes.NewReader(bytes.Repeat([]byte{7}, 64))
	cases := []struct {
		name    string
		objs    []runtime.Object
		spec    *recipe.SecretRef
		allow   bool
		source  AuthSource
		secret  string
		key     string
		dropped string
	}{
		{name: "first run: a key is generated", source: AuthGenerated, secret: "qwen-api-key", key: "ain-"},
		{name: "re-run: ain's Secret is kept", objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old-key", true)},
			source: AuthLive, secret: "qwen-api-key", key: "old-key"},
		{name: "re-run: the live server's own Secret is kept", objs: []runtime.Object{liveDeployment("mine"), keySecret("mine", "k", "their-key", false)},
			source: AuthLive, secret: "mine", key: "their-key"},
		{name: "live reference to a deleted Secret: ain's own, else a new key", objs: []runtime.Object{liveDeployment("gone")},
			source: AuthGenerated, secret: "qwen-api-key", key: "ain-"},
		{name: "recipe key", spec: &recipe.SecretRef{Name: "mine", Key: "k"}, objs: []runtime.Object{keySecret("mine", "k", "recipe-key-value", false)},
			source: AuthRecipe, secret: "mine", key: "recipe-key-value"},
		{name: "explicitly unauthenticated drops ain's Secret", allow: true, objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old", true)},
			source: AuthNone, dropped: "qwen-api-key"},
		{name: "explicitly unauthenticated keeps a Secret ain did not make", allow: true, objs: []runtime.Object{keySecret("qwen-api-key", APIKeySecretKey, "old", false)},
			source: AuthNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &recipe.ServingSpec{APIKeySecret: c.spec}
			a, err := authCluster(c.objs...).ResolveAuth(ctx, "qwen", s, c.allow, random)
			if err != nil {
				t.Fatal(err)
			}
			if a.Source != c.source || a.Dropped != c.dropped {
				t.Fatalf("auth %+v, want source %s dropped %q", a, c.source, c.dropped)
			}
			if c.source == AuthNone {
				if s.APIKeySecret != nil || a.Secret != nil {
					t.Errorf("unauthenticated, yet a key: %+v", s.APIKeySecret)
				}
				return
			}
			if s.APIKeySecret == nil || s.APIKeySecret.Name != c.secret || a.Secret.Name != c.secret {
				t.Errorf("the Deployment would read %+v, want Secret %s", s.APIKeySecret, c.secret)
			}
			if !strings.HasPrefix(a.Key, c.key) {
				t.Errorf("key %q, want %q...", a.Key, c.key)
			}
			if (a.Generated != "") != (c.source == AuthGenerated) || strings.Contains(a.Describe(), a.Key) {
				t.Errorf("generated %q, describe %q", a.Generated, a.Describe())
			}
		})
	}
	// A Secret whose key is missing, empty or padded would make vLLM drop it and run open while
	// ain reported it guarded: refused, the recipe's Secret and ain's own alike.
	for _, bad := range []struct {
		sec  *corev1.Secret
		spec *recipe.SecretRef
		why  string
	}{
		{keySecret("mine", "other", "x", false), &recipe.SecretRef{Name: "mine", Key: "k"}, "does not exist"},
		{keySecret("mine", "k", "", false), &recipe.SecretRef{Name: "mine", Key: "k"}, "is empty"},
		{keySecret("mine", "k", "key\n", false), &recipe.SecretRef{Name: "mine", Key: "k"}, "whitespace"},
		{keySecret("qwen-api-key", APIKeySecretKey, "  ", true), nil, "is empty"},
	} {
		_, err := authCluster(bad.sec).ResolveAuth(ctx, "qwen", &recipe.ServingSpec{APIKeySecret: bad.spec}, false, random)
		var be *BadKeyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), bad.why) || !strings.Contains(err.Error(), "without authentication") {
			t.Errorf("%s %v: %v", bad.sec.Name, bad.sec.Data, err)
		}
	}
	_, err := authCluster().ResolveAuth(ctx, "qwen", &recipe.ServingSpec{APIKeySecret: &recipe.SecretRef{Name: "mine", Key: "k"}}, true, nil)
	var ce *AuthConflictError
	if !errors.As(err, &ce) {
		t.Errorf("a key and --allow-unauthenticated: %v", err)
	}
}

// Offline (render, client dry run): the Deployment reads NAME-api-key unless the user opted out.
func TestDefaultAuthRendered(t *testing.T) {
	for _, allow := range []bool{false, true} {
		r, err := recipe.Load("vllm", nil)
		if err != nil {
			t.Fatal(err)
		}
		auth := DefaultAuth(r.Serving, "vllm", allow)
		objs, err := BuildObjects(r, profile.Default(), ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := apiKeyRef(objs.Deployments[0].Spec.Template.Spec.Containers[0].Env)
		switch {
		case allow && (ref != nil || auth.Source != AuthNone):
			t.Errorf("--allow-unauthenticated rendered a key %+v", ref)
		case !allow && (ref == nil || ref.Name != "vllm-api-key" || ref.Key != APIKeySecretKey || auth.Source != AuthDefault):
			t.Errorf("default: VLLM_API_KEY from %+v, auth %+v", ref, auth)
		}
	}
}

func TestNewAPIKey(t *testing.T) {
	a, err := NewAPIKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAPIKey(nil)
	if a == b || len(a) != len("ain-")+43 || strings.ContainsAny(a, "+/= ") {
		t.Errorf("keys %q %q", a, b)
	}
	if _, err := NewAPIKey(bytes.NewReader(nil)); err == nil {
		t.Error("no randomness, yet a key")
	}
}

// A new version of the key Secret rolls the pods (vLLM reads the key at start); the annotation
// holds the Secret's resourceVersion, never the key.
func TestKeyVersion(t *testing.T) {
	objs := servingObjects(t)
	a := Auth{Source: AuthLive, Secret: &recipe.SecretRef{Name: "vllm-api-key", Key: APIKeySecretKey}, Key: "the-key", Version: "41"}
	sec := &unstructured.Unstructured{}
	sec.SetKind("Secret")
	sec.SetName("vllm-api-key")
	sec.SetResourceVersion("57")
	other := sec.DeepCopy()
	other.SetName("hf-token")
	other.SetResourceVersion("99")
	if v := a.KeyVersion([]*unstructured.Unstructured{other}); v != "41" {
		t.Errorf("not applied this run: version %q, want the one read", v)
	}
	v := a.KeyVersion([]*unstructured.Unstructured{other, sec})
	if v != "57" {
		t.Errorf("applied this run: version %q", v)
	}
	SetKeyVersion(objs.Deployments, v)
	for _, d := range objs.Deployments {
		if got := d.Spec.Template.Annotations[AnnotationAPIKeyVersion]; got != "57" || d.Spec.Template.Annotations[AnnotationModel] == "" {
			t.Errorf("%s: pod template annotations %v", d.Name, d.Spec.Template.Annotations)
		}
	}
	if (Auth{Source: AuthNone}).KeyVersion([]*unstructured.Unstructured{sec}) != "" {
		t.Error("no key, yet a version")
	}
}
