package preflight

import (
	"context"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ain-hpc/ain/pkg/claims"
	"github.com/ain-hpc/ain/pkg/ibport"
	"github.com/ain-hpc/ain/pkg/jobs"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
)

func node(name string, gpu, rdma int64, ready bool, taints ...corev1.Taint) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "a"}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpu, resource.DecimalSI)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
	if rdma > 0 {
		n.Status.Allocatable["rdma/rdma_shared_device_a"] = *resource.NewQuantity(rdma, resource.DecimalSI)
	}
	return n
}

func TestCheckNodes(t *testing.T) {
	cs := fake.NewClientset(
		node("n1", 8, 63, true), node("n2", 8, 63, true), node("n3", 8, 0, true),
		node("n4", 4, 63, true), node("n5", 8, 63, false),
		node("n6", 8, 63, true, corev1.Taint{Key: "gpu", Value: "x", Effect: corev1.TaintEffectNoSchedule}),
	)
	lists := 0
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { lists++; return false, nil, nil })
	o := Options{Kube: cs, Namespace: "default", Profile: profile.Default(), Nodes: 2, GPUsPerNode: 8}
	o.defaults()
	checks, cands := checkNodes(context.Background(), o)
	if len(cands) != 2 || cands[0].Name != "n1" || cands[1].Name != "n2" {
		t.Fatalf("candidates %v", names(cands))
	}
	if checks[0].Status != Pass || !strings.Contains(checks[0].Message, "2 of 6 node(s)") {
		t.Errorf("first check %+v", checks[0])
	}
	got := map[string]string{}
	for _, c := range checks[1:] {
		got[c.Target] = strings.Join(c.Evidence, "|")
		if c.Status != Warn || c.Fix == "" {
			t.Errorf("%+v", c)
		}
	}
	for k, want := range map[string]string{"rdma": "n3: rdma/rdma_shared_device_a allocatable 0 (needs 1)", "gpu": "n4: nvidia.com/gpu allocatable 4 (needs 8)", "notready": "n5: not Ready", "taint": "n6: taint gpu=x:NoSchedule"} {
		if !strings.Contains(got[k], want) {
			t.Errorf("%s: %q lacks %q", k, got[k], want)
		}
	}
	if lists != 1 {
		t.Errorf("%d node list calls", lists)
	}
	// Three nodes needed: FAIL. A toleration in the profile makes n6 a candidate.
	o.Nodes = 3
	checks, _ = checkNodes(context.Background(), o)
	if checks[0].Status != Fail || !strings.Contains(checks[0].Message, "the recipe needs 3") {
		t.Errorf("%+v", checks[0])
	}
	o.Profile = profile.Default()
	o.Profile.Spec.Tolerations = []profile.Toleration{{Key: "gpu", Operator: "Exists"}}
	checks, cands = checkNodes(context.Background(), o)
	if checks[0].Status != Pass || len(cands) != 3 {
		t.Errorf("with toleration: %+v %v", checks[0], names(cands))
	}
	// --nodes narrows; a bad selector is a FAIL, not a crash.
	o.NodeSelector = "pool=b"
	checks, _ = checkNodes(context.Background(), o)
	if checks[0].Status != Fail || !strings.Contains(checks[0].Message, "no node matching pool=b") {
		t.Errorf("%+v", checks[0])
	}
	o.NodeSelector = "pool in (("
	checks, _ = checkNodes(context.Background(), o)
	if checks[0].Status != Fail {
		t.Errorf("%+v", checks[0])
	}
}

// archNode is a ready RDMA GPU node of architecture arch.
func archNode(name string, gpus int64, arch string) *corev1.Node {
	n := node(name, gpus, 63, true)
	n.Labels["kubernetes.io/arch"] = arch
	return n
}

// TestCheckNodesArch: a GPU node of another CPU architecture than the image's is no candidate,
// and the check says which label and which image architectures; without Arches it counts.
func TestCheckNodesArch(t *testing.T) {
	cs := fake.NewClientset(archNode("gh200-1", 4, "arm64"), archNode("h100-1", 8, "amd64"))
	o := Options{Kube: cs, Namespace: "default", Profile: profile.Default(), Nodes: 2, GPUsPerNode: 4, Arches: []string{"amd64"}}
	o.defaults()
	checks, cands := checkNodes(context.Background(), o)
	if len(cands) != 1 || cands[0].Name != "h100-1" || checks[0].Status != Fail {
		t.Fatalf("candidates %v, first check %+v", names(cands), checks[0])
	}
	var arch *Check
	for i := range checks {
		if checks[i].Target == "arch" {
			arch = &checks[i]
		}
	}
	if arch == nil || !strings.Contains(strings.Join(arch.Evidence, "|"), "gh200-1: kubernetes.io/arch=arm64 (the image is built for amd64)") || !strings.Contains(arch.Fix, "spec.architectures") {
		t.Errorf("arch check %+v", arch)
	}
	o.Arches = nil
	if checks, cands = checkNodes(context.Background(), o); len(cands) != 2 || checks[0].Status != Pass {
		t.Errorf("without arches: %v %+v", names(cands), checks[0])
	}
}

func names(ns []corev1.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func TestCheckRBAC(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = !(ra.Resource == "mpijobs" && ra.Verb == "delete") && ra.Resource != "nodes"
		return true, r, nil
	})
	o := Options{Kube: cs, Namespace: "team", Profile: profile.Default()}
	checks := checkRBAC(context.Background(), o)
	if len(checks) != 2 || checks[0].Status != Fail || checks[1].Status != Warn {
		t.Fatalf("%+v", checks)
	}
	// No discovery: the default APIs (trainer for torch, the mpi-operator's mpijobs for MPI).
	if checks[0].Evidence[0] != "cannot delete mpijobs.kubeflow.org in namespace team (ain train/status/delete (mpi-operator))" {
		t.Errorf("%q", checks[0].Evidence)
	}
	if !strings.Contains(checks[1].Evidence[0], "list nodes (cluster-wide)") {
		t.Errorf("%q", checks[1].Evidence)
	}
}

const initDump = `/sys/class/infiniband/mlx5_0/ports/1/state:2: INIT
/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp
/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand
/sys/class/infiniband/mlx5_0/ports/1/rate:200 Gb/sec (4X HDR)
/sys/class/infiniband/mlx5_1/ports/1/state:4: ACTIVE
/sys/class/infiniband/mlx5_1/ports/1/phys_state:5: LinkUp
/sys/class/infiniband/mlx5_1/ports/1/link_layer:InfiniBand
`

func TestBadPortsEvidence(t *testing.T) {
	rep, err := ibport.Parse(strings.NewReader(initDump))
	if err != nil {
		t.Fatal(err)
	}
	var bad []ibport.Port
	for _, p := range rep.Ports {
		if !p.Ready {
			bad = append(bad, p)
		}
	}
	c := badPorts("gpu-node-2", &probe.Outcome{Log: []byte(initDump)}, bad)
	if c.Status != Fail || c.Fix != NoSMFix || !strings.Contains(c.Message, "mlx5_0:1: physical state LinkUp but state INIT") {
		t.Errorf("%+v", c)
	}
	want := []string{"/sys/class/infiniband/mlx5_0/ports/1/state:2: INIT", "/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp"}
	if strings.Join(c.Evidence, "\n") != strings.Join(want, "\n") {
		t.Errorf("evidence %q", c.Evidence)
	}
}

func TestTolerates(t *testing.T) {
	taint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		tl   corev1.Toleration
		want bool
	}{
		{corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, true},
		{corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
		{corev1.Toleration{Key: "nvidia.com/gpu", Value: "present"}, true},
		{corev1.Toleration{Key: "nvidia.com/gpu", Value: "other"}, false},
	} {
		if got := tolerates(&tc.tl, &taint); got != tc.want {
			t.Errorf("%+v: %v", tc.tl, got)
		}
	}
}

func TestCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := Cache{Dir: t.TempDir(), TTL: 5 * time.Minute, Now: func() time.Time { return now }}
	o := Options{Cluster: "https://127.0.0.1:6443", Namespace: "default", Profile: profile.Default(), Nodes: 2, GPUsPerNode: 8}
	key := Key(o)
	o2 := o
	o2.Namespace = "other"
	if Key(o2) == key {
		t.Error("key ignores the namespace")
	}
	ok := &Result{Checks: []Check{{Name: CheckAPI, Status: Pass}, {Name: CheckNodes, Status: Warn}}}
	if err := c.Save(key, ok); err != nil {
		t.Fatal(err)
	}
	now = now.Add(4 * time.Minute)
	r, age, hit := c.Load(key)
	// ok has no kind, as a result an older ain cached: it is loaded as a preflight result.
	if !hit || !r.Cached || age != 4*time.Minute || len(r.Checks) != 2 || r.Kind != Kind {
		t.Errorf("hit %v age %v %+v", hit, age, r)
	}
	now = now.Add(2 * time.Minute)
	if _, _, hit := c.Load(key); hit {
		t.Error("expired entry used")
	}
	// A failing result is never reused, and removes a passing one.
	now = now.Add(-2 * time.Minute)
	if err := c.Save(key, &Result{Checks: []Check{{Name: CheckIBPorts, Status: Fail}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, hit := c.Load(key); hit {
		t.Error("failing result cached")
	}
}

func TestSplitNetworkAndSummary(t *testing.T) {
	for in, want := range map[string]string{"net1": "ns/net1", "other/net2": "other/net2", "net3@ib0": "ns/net3", "x/net4@eth1": "x/net4"} {
		ns, n := splitNetwork(in, "ns")
		if ns+"/"+n != want {
			t.Errorf("%s: %s/%s", in, ns, n)
		}
	}
	r := &Result{Checks: []Check{{Name: "api", Status: Pass}, {Name: "ib-ports", Target: "gpu-node-2", Status: Fail}, {Name: "nodes", Status: Warn}}}
	if s := r.Summary(); s != "1 PASS, 1 WARN, 1 FAIL (ib-ports gpu-node-2)" || !r.Failed() {
		t.Errorf("%q", s)
	}
}

// The CRD check per cluster: which API each workload runs as, and a FAIL that names what to
// install, never an install that replaces the cluster's mpijobs.kubeflow.org CRD.
func TestCheckCRDs(t *testing.T) {
	res := func(pairs ...string) []*metav1.APIResourceList {
		var out []*metav1.APIResourceList
		for _, p := range pairs {
			gv, r, _ := strings.Cut(p, " ")
			out = append(out, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: r, Namespaced: true}}})
		}
		return out
	}
	legacy := res("kubeflow.org/v1 pytorchjobs", "kubeflow.org/v1 mpijobs")
	current := res("kubeflow.org/v2beta1 mpijobs", "trainer.kubeflow.org/v1alpha1 trainjobs", "trainer.kubeflow.org/v1alpha1 trainingruntimes")
	cases := []struct {
		name     string
		served   []*metav1.APIResourceList
		workload jobs.Workload
		api      jobs.API
		status   Status
		msg, fix string
		notInFix string
	}{
		{"legacy", legacy, "", "", Pass, "torch recipes run as kubeflow.org/v1 PyTorchJob/MPIJob", "", ""},
		{"current", current, "", "", Pass, "mpi recipes run as kubeflow.org/v2beta1 MPIJob", "", ""},
		{"nothing", nil, "", "", Fail, "serves no job API for torch recipes", "Trainer v2", ""},
		{"mpi-operator only, torch", res("kubeflow.org/v2beta1 mpijobs"), jobs.WorkloadTorch, "", Fail, "serves no job API for torch recipes", "Trainer", "training-operator"},
		{"mpi-operator only, mpi", res("kubeflow.org/v2beta1 mpijobs"), jobs.WorkloadMPI, "", Pass, "kubeflow.org/v2beta1", "", ""},
		{"v1 forced on v2beta1", current, jobs.WorkloadMPI, jobs.APITrainingOperator, Fail, "one CRD owns mpijobs.kubeflow.org", "--api mpi-operator", "install"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.Resources = c.served
			o := Options{Kube: cs, Namespace: "team", Profile: profile.Default(), Workload: c.workload, API: c.api}
			o.served, o.discoverErr = jobs.Discover(cs.Discovery())
			ch := checkCRDs(context.Background(), o)
			if ch.Status != c.status || !strings.Contains(ch.Message, c.msg) || !strings.Contains(ch.Fix, c.fix) {
				t.Errorf("%+v\nwant %s, message with %q, fix with %q", ch, c.status, c.msg, c.fix)
			}
			if c.notInFix != "" && strings.Contains(ch.Fix, c.notInFix) {
				t.Errorf("fix %q must not say %q", ch.Fix, c.notInFix)
			}
		})
	}
}

// TestCheckVolumes: preflight FAILs a recipe whose claim is missing or ReadWriteOnce for ranks
// on several nodes, naming the claim and the fix, and PASSes a bound ReadWriteMany claim.
func TestCheckVolumes(t *testing.T) {
	mk := func(name string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:   corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{mode}}}
	}
	cs := fake.NewClientset(mk("nfs-shared", corev1.ReadWriteMany), mk("disk", corev1.ReadWriteOnce))
	o := Options{Kube: cs, Namespace: "default", Profile: profile.Default(), Nodes: 2}
	for claim, want := range map[string]Status{"nfs-shared": Pass, "disk": Fail, "nfs-typo": Fail} {
		o.Volumes = []claims.Use{{Volume: "shared", Claim: claim}}
		checks := checkVolumes(context.Background(), o)
		if len(checks) != 1 || checks[0].Status != want || checks[0].Target != claim || (want == Fail && checks[0].Fix == "") {
			t.Errorf("%s: %+v, want %s", claim, checks, want)
		}
	}
	o.Volumes = nil
	if checks := checkVolumes(context.Background(), o); checks != nil {
		t.Errorf("no volumes: %+v", checks)
	}
}
