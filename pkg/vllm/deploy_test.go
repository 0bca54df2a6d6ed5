package vllm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// events records a Deployer's events.
type events []Event

func (es *events) add(e Event) { *es = append(*es, e) }

func (es events) find(k EventKind) *Event {
	for i := range es {
		if es[i].Kind == k {
			return &es[i]
		}
	}
	return nil
}

// Against a cluster: the IngressClass's controller, not its name, tells whether the annotations
// are read (F5's NGINX Ingress Controller often takes the class name nginx); a class that does
// not exist is said to serve nothing; the choice is given with its reason.
func TestChooseEntryEvents(t *testing.T) {
	for _, tc := range []struct {
		class, controller string
		want              EventKind
		wantMsg           string
	}{
		{"nginx", "k8s.io/ingress-nginx", -1, ""},
		{"nginx", "nginx.org/ingress-controller", EventWarning, "IngressClass nginx (controller nginx.org/ingress-controller) is not ingress-nginx"},
		{"", "", EventIngressClassMissing, "nginx"},
	} {
		kc := fake.NewClientset()
		if tc.class != "" {
			_, _ = kc.NetworkingV1().IngressClasses().Create(context.Background(), &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: tc.class},
				Spec: networkingv1.IngressClassSpec{Controller: tc.controller}}, metav1.CreateOptions{})
		}
		dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}: "HTTPRouteList",
		})
		r, err := recipe.Load("vllm", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got events
		d := &Deployer{Progress: got.add}
		cl := &Cluster{Kube: kc, Dynamic: dyn, Namespace: "llm"}
		if err := d.chooseEntry(context.Background(), cl, r, "vllm", "spec.expose auto"); err != nil {
			t.Fatal(err)
		}
		if e := got.find(EventExpose); e == nil || !strings.HasPrefix(e.Message, "ingress (auto: a new model server, and the cluster does not serve the Gateway API") {
			t.Errorf("%s/%s: expose event %+v", tc.class, tc.controller, e)
		}
		if r.Serving.Expose != "ingress" {
			t.Errorf("%s/%s: expose %s", tc.class, tc.controller, r.Serving.Expose)
		}
		for _, k := range []EventKind{EventWarning, EventIngressClassMissing} {
			e := got.find(k)
			switch {
			case k != tc.want && e != nil:
				t.Errorf("%s/%s: unexpected event %+v", tc.class, tc.controller, e)
			case k == tc.want && (e == nil || !strings.Contains(e.Message, tc.wantMsg)):
				t.Errorf("%s/%s: event %d %+v, want %q", tc.class, tc.controller, k, e, tc.wantMsg)
			}
		}
	}
}

// deployCluster is a fake cluster for the vllm recipe: its claim (ReadWriteMany), no Gateway
// API, an ingress-nginx IngressClass, and server-side applies answered by apply (nil: accepted).
func deployCluster(t *testing.T, apply func(resource string) error) *Cluster {
	t.Helper()
	cl := gatewayCluster(t, false, nil)
	kc := cl.Kube.(*fake.Clientset)
	ctx := context.Background()
	if _, err := kc.CoreV1().PersistentVolumeClaims("llm").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "nfs-shared", Namespace: "llm"},
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: networkingv1.IngressClassSpec{Controller: IngressNginxController}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl.Dynamic.(*dynfake.FakeDynamicClient).PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if apply != nil {
			if err := apply(pa.GetResource().Resource); err != nil {
				return true, nil, err
			}
		}
		u := &unstructured.Unstructured{}
		_ = u.UnmarshalJSON(pa.GetPatch())
		return true, u, nil
	})
	return cl
}

func deployRecipe(t *testing.T) *recipe.Recipe {
	t.Helper()
	r, err := recipe.Load("vllm", []string{"ingress.host=llm.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A refused apply names what went in before it (the Secret holding the generated key, the TLS
// Secret), so that the user can remove it; nothing is waited for.
func TestDeployRefusedApplyNamesCreated(t *testing.T) {
	cl := deployCluster(t, func(resource string) error {
		if resource == "services" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "vllm", errors.New("no"))
		}
		return nil
	})
	var got events
	d := &Deployer{Cluster: func() (*Cluster, error) { return cl, nil }, Now: time.Now, Progress: got.add}
	_, err := d.Deploy(context.Background(), DeployOptions{Recipe: deployRecipe(t), Profile: profile.Default(), Namespace: "llm", ExposeSource: "spec.expose auto"})
	var ae *ApplyError
	if !errors.As(err, &ae) || !apierrors.IsForbidden(err) {
		t.Fatalf("err %v (%T), want an ApplyError wrapping the refusal", err, err)
	}
	created := strings.Join(ae.Created, ", ")
	if ae.Name != "vllm" || !strings.Contains(created, "Secret llm/vllm-api-key") || !strings.HasPrefix(created, "Secret llm/") || len(ae.Created) != 2 {
		t.Errorf("created %q (name %s)", created, ae.Name)
	}
	if e := got.find(EventTLS); e == nil || e.TLS == nil || !e.TLS.Created || e.Host != "llm.example.com" {
		t.Errorf("TLS event %+v", e)
	}
	if got.find(EventApplying) == nil || got.find(EventApplied) != nil || got.find(EventKeyGenerated) != nil {
		t.Errorf("events %+v", got)
	}
}

// Not public by default: without a key given, one is generated into the server's Secret,
// applied first and announced once; the server dry run names it without creating anything.
func TestDeployGeneratesKey(t *testing.T) {
	var applied []string
	cl := deployCluster(t, func(resource string) error { applied = append(applied, resource); return nil })
	var got events
	var written string
	d := &Deployer{Cluster: func() (*Cluster, error) { return cl, nil }, Now: time.Now, Progress: got.add}
	res, err := d.Deploy(context.Background(), DeployOptions{Recipe: deployRecipe(t), Profile: profile.Default(), Namespace: "llm",
		ExposeSource: "spec.expose auto", DryRunServer: true, WriteKey: func(k string) error { written = k; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if written != "" {
		t.Errorf("a server dry run wrote the key")
	}
	if e := got.find(EventInfo); e == nil || e.Message != "auth: vLLM would require an API key generated into Secret vllm-api-key" {
		t.Errorf("auth event %+v", e)
	}
	for _, o := range res.DryRun {
		if o.GetObjectKind().GroupVersionKind().Kind == "Secret" {
			t.Errorf("the dry run result shows a Secret")
		}
	}
	if len(applied) == 0 || applied[0] != "secrets" {
		t.Errorf("applied %v: the key's Secret first", applied)
	}
}

// An interrupt while the objects are built reads nothing from the cluster.
func TestDeployInterruptedBuilding(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := &Deployer{Cluster: func() (*Cluster, error) { t.Fatal("the cluster was asked for"); return nil, nil }, Now: time.Now}
	_, err := d.Deploy(ctx, DeployOptions{Recipe: deployRecipe(t), Profile: profile.Default(), Namespace: "llm"})
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Stage != InterruptedBuilding {
		t.Fatalf("err %v", err)
	}
}

// A named model server that does not exist is a NotFoundError; none at all is an empty list.
func TestReportsNotFound(t *testing.T) {
	cl := deployCluster(t, nil)
	o := ReportOptions{Name: "nope", Now: time.Now, Discovery: &Discovery{Cluster: cl}}
	var nf *NotFoundError
	if _, err := cl.Reports(context.Background(), o); !errors.As(err, &nf) || nf.Name != "nope" || nf.Namespace != "llm" {
		t.Fatalf("err %v", err)
	}
	o.Name = ""
	if got, err := cl.Reports(context.Background(), o); err != nil || len(got) != 0 {
		t.Fatalf("%v, %v", got, err)
	}
}

// A recipe without spec.serving is a BuildError before the cluster is asked (it panicked); a key
// named by the recipe with AllowUnauthenticated is the inputs' conflict, returned as itself, not
// as a failure to read the cluster.
func TestDeployRefusesBadInputs(t *testing.T) {
	d := &Deployer{Cluster: func() (*Cluster, error) { t.Fatal("the cluster was asked for"); return nil, nil }, Now: time.Now}
	train, err := recipe.Load("qlora", nil)
	if err != nil {
		t.Fatal(err)
	}
	var be *BuildError
	if _, err := d.Deploy(context.Background(), DeployOptions{Recipe: train, Profile: profile.Default(), Namespace: "llm"}); !errors.As(err, &be) || !strings.Contains(err.Error(), "no spec.serving") {
		t.Fatalf("training recipe: %v", err)
	}
	cl := deployCluster(t, nil)
	d = &Deployer{Cluster: func() (*Cluster, error) { return cl, nil }, Now: time.Now}
	r, err := recipe.Load("vllm", []string{"ingress.host=llm.example.com", "apiKeySecret.name=mine", "apiKeySecret.key=k"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Deploy(context.Background(), DeployOptions{Recipe: r, Profile: profile.Default(), Namespace: "llm", ExposeSource: "spec.expose auto", AllowUnauthenticated: true})
	var conflict *AuthConflictError
	var ce *ClusterError
	if !errors.As(err, &conflict) || errors.As(err, &ce) {
		t.Fatalf("key and --allow-unauthenticated: %v (%T)", err, err)
	}
}
