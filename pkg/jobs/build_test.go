package jobs

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

var fabrics = []string{profile.FabricIB, profile.FabricRoCE, profile.FabricSocket}

// loadRecipe loads a built-in recipe (or a file) with sets, failing the test when it cannot.
func loadRecipe(t testing.TB, name string, sets ...string) *recipe.Recipe {
	t.Helper()
	r, err := recipe.Load(name, sets)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return r
}

func render(t testing.TB, name, fabric string, sets ...string) *Bundle {
	t.Helper()
	r := loadRecipe(t, name, sets...)
	p, err := profile.Load(profile.Options{Fabric: fabric, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(r, p, Options{})
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	return b
}

// TestGolden renders every built-in job recipe for every fabric and compares the YAML with
// testdata/golden/<recipe>-<fabric>.yaml (go test ./pkg/jobs -update rewrites them).
func TestGolden(t *testing.T) {
	for _, name := range []string{"qlora", "allreduce"} {
		for _, fabric := range fabrics {
			t.Run(name+"-"+fabric, func(t *testing.T) {
				b := render(t, name, fabric)
				got, err := Encode(b.Objects, "yaml")
				if err != nil {
					t.Fatal(err)
				}
				again, _ := Encode(render(t, name, fabric).Objects, "yaml")
				if !bytes.Equal(got, again) {
					t.Fatal("rendering twice gave different bytes: output must be deterministic")
				}
				golden.File(t, filepath.Join("testdata", "golden", name+"-"+fabric+".yaml"), got)
			})
		}
	}
}

// rankPods returns the pod templates of the GPU ranks (not the MPI launcher).
func rankPods(t *testing.T, b *Bundle) []corev1.PodTemplateSpec {
	t.Helper()
	var out []corev1.PodTemplateSpec
	for _, o := range b.Objects {
		switch j := o.(type) {
		case *kubeflowv1.PyTorchJob:
			for _, rt := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
				if s := j.Spec.PyTorchReplicaSpecs[rt]; s != nil {
					out = append(out, s.Template)
				}
			}
		case *kubeflowv1.MPIJob:
			out = append(out, j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template)
		}
	}
	if len(out) == 0 {
		t.Fatal("no rank pod templates")
	}
	return out
}

func envMap(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func TestRDMAPods(t *testing.T) {
	for _, name := range []string{"qlora", "allreduce"} {
		for _, fabric := range fabrics {
			b := render(t, name, fabric)
			for _, pod := range rankPods(t, b) {
				c := pod.Spec.Containers[0]
				env := envMap(c)
				gpu := c.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
				if gpu.Value() != 1 || !gpu.Equal(c.Resources.Requests[corev1.ResourceName("nvidia.com/gpu")]) {
					t.Errorf("%s/%s: nvidia.com/gpu request=limit=1 expected, got %v", name, fabric, c.Resources)
				}
				rdma, hasRDMA := c.Resources.Limits[corev1.ResourceName(profile.DefaultRDMAResource)]
				var shm *corev1.EmptyDirVolumeSource
				for _, v := range pod.Spec.Volumes {
					if v.Name == ShmVolume {
						shm = v.EmptyDir
					}
				}
				if shm == nil || shm.Medium != corev1.StorageMediumMemory || shm.SizeLimit == nil {
					t.Errorf("%s/%s: no memory-backed /dev/shm with a size limit", name, fabric)
				}
				// TUNING (a line per collective call) only for the benchmark, never for training.
				wantSubsys := "INIT,ENV,NET,GRAPH"
				if name == "allreduce" {
					wantSubsys += ",TUNING"
				}
				if env["NCCL_DEBUG"] != "INFO" || env["NCCL_DEBUG_SUBSYS"] != wantSubsys {
					t.Errorf("%s/%s: NCCL_DEBUG_SUBSYS %q, want %q", name, fabric, env["NCCL_DEBUG_SUBSYS"], wantSubsys)
				}
				switch fabric {
				case profile.FabricSocket:
					if hasRDMA {
						t.Errorf("%s/socket: RDMA resource requested", name)
					}
					if env["NCCL_IB_DISABLE"] != "1" {
						t.Errorf("%s/socket: NCCL_IB_DISABLE=1 missing", name)
					}
				default:
					if !hasRDMA || rdma.Value() != 1 {
						t.Errorf("%s/%s: RDMA resource missing: %v", name, fabric, c.Resources.Limits)
					}
					sc := c.SecurityContext
					if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "IPC_LOCK" {
						t.Errorf("%s/%s: IPC_LOCK missing", name, fabric)
					}
					if _, ok := env["NCCL_IB_DISABLE"]; ok {
						t.Errorf("%s/%s: NCCL_IB_DISABLE set on an RDMA fabric", name, fabric)
					}
					// gidIndex auto: no NCCL_IB_GID_INDEX at all (-1 is rejected by NCCL < 2.21).
					if g, ok := env["NCCL_IB_GID_INDEX"]; ok {
						t.Errorf("%s/%s: NCCL_IB_GID_INDEX=%s rendered for gidIndex auto", name, fabric, g)
					}
				}
			}
		}
	}
}

func TestPyTorchJobRules(t *testing.T) {
	b := render(t, "qlora", "ib")
	j := b.Objects[0].(*kubeflowv1.PyTorchJob)
	if j.Kind != "PyTorchJob" || j.APIVersion != "kubeflow.org/v1" {
		t.Fatalf("type meta %v", j.TypeMeta)
	}
	m := j.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]
	w := j.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]
	if *m.Replicas != 1 || *w.Replicas != 2 {
		t.Errorf("3 nodes must be 1 master + 2 workers, got %d + %d", *m.Replicas, *w.Replicas)
	}
	if m.Template.Spec.Containers[0].Name != "pytorch" {
		t.Error("the training-operator requires a container named pytorch")
	}
	if j.Labels[LabelManagedBy] != "ain" || j.Labels[LabelRun] != "qlora" || m.Template.Labels[LabelRun] != "qlora" {
		t.Errorf("labels: %v / %v", j.Labels, m.Template.Labels)
	}
	if *j.Spec.NprocPerNode != "1" {
		t.Errorf("nprocPerNode %s", *j.Spec.NprocPerNode)
	}
	one := render(t, "qlora", "ib", "nodes=1").Objects[0].(*kubeflowv1.PyTorchJob)
	if _, ok := one.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]; ok {
		t.Error("a 1-node job must have no Worker replica spec")
	}
}

func TestMPIJob(t *testing.T) {
	b := render(t, "allreduce", "roce", "nodes=2", "gpusPerNode=8")
	j, ok := b.Objects[0].(*kubeflowv1.MPIJob)
	if !ok {
		t.Fatalf("allreduce must render an MPIJob, got %T", b.Objects[0])
	}
	if err := kubeflowv1.ValidateV1MpiJobSpec(&j.Spec); err != nil {
		t.Fatalf("the training-operator's own MPIJob validation rejects it: %v", err)
	}
	if *j.Spec.SlotsPerWorker != 8 {
		t.Errorf("slotsPerWorker %d, want 8", *j.Spec.SlotsPerWorker)
	}
	if *j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Replicas != 2 {
		t.Error("want 2 workers")
	}
	l := j.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]
	cmd := strings.Join(l.Template.Spec.Containers[0].Command, " ")
	for _, want := range []string{"mpirun", "-np 16", "-npernode 8", "-x NCCL_DEBUG_SUBSYS", "-mca coll_hcoll_enable 0", "-mca btl_tcp_if_exclude lo,docker0", "all_reduce_perf -b 8 -e 8G -f 2 -g 1 -c 1"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("launcher command lacks %q: %s", want, cmd)
		}
	}
	if _, ok := l.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceName("nvidia.com/gpu")]; ok {
		t.Error("the launcher must not request a GPU")
	}
}

// TestMPIRanksPerNode: with nccl-tests' -g N one rank drives N GPUs, so mpirun starts
// gpusPerNode/N ranks per node (at least one), and the slotsPerWorker of the v2beta1 and the
// kubeflow.org/v1 MPIJob agree with the launcher's -npernode.
func TestMPIRanksPerNode(t *testing.T) {
	p, err := profile.Load(profile.Options{Fabric: profile.FabricIB, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g           string
		np, perNode string
		slots       int32
	}{
		{"1", "-np 16", "-npernode 8", 8},
		{"2", "-np 8", "-npernode 4", 4},
		{"8", "-np 2", "-npernode 1", 1},
	} {
		r := loadRecipe(t, "allreduce", "nodes=2", "gpusPerNode=8", "ncclTests.gpusPerThread="+c.g)
		cmd := strings.Join(MPIRunCommand(r, p), " ")
		if !strings.Contains(cmd, c.np+" "+c.perNode+" ") || !strings.Contains(cmd, " -g "+c.g+" ") {
			t.Errorf("-g %s: want %s %s: %s", c.g, c.np, c.perNode, cmd)
		}
		j, err := buildMPIJobV2(r, p, "allreduce", "default")
		if err != nil {
			t.Fatal(err)
		}
		if *j.Spec.SlotsPerWorker != c.slots {
			t.Errorf("-g %s: v2beta1 slotsPerWorker %d, want %d", c.g, *j.Spec.SlotsPerWorker, c.slots)
		}
		j1, err := buildMPIJob(r, p, "allreduce", "default")
		if err != nil {
			t.Fatal(err)
		}
		if *j1.Spec.SlotsPerWorker != c.slots {
			t.Errorf("-g %s: kubeflow.org/v1 slotsPerWorker %d, want %d", c.g, *j1.Spec.SlotsPerWorker, c.slots)
		}
	}
}

func TestNCCLOverrideWins(t *testing.T) {
	b := render(t, "allreduce", "socket", "nccl.env.NCCL_IB_DISABLE=0", "nccl.env.NCCL_ALGO=Tree")
	env := envMap(rankPods(t, b)[0].Spec.Containers[0])
	if env["NCCL_IB_DISABLE"] != "0" || env["NCCL_ALGO"] != "Tree" {
		t.Errorf("recipe nccl.env must win over the profile: %v", env)
	}
}

func TestProfileDerivations(t *testing.T) {
	data := []byte(`apiVersion: ain.dev/v1alpha1
kind: FabricProfile
spec:
  fabric: roce
  rdma: {resource: nvidia.com/sriov_rdma, count: 2}
  networks: [default/rdma-net@net1]
  hcas: [mlx5_0:1, mlx5_1:1]
  gidIndex: "3"
  trafficClass: 106
  socketIfname: net1
  gdrLevel: PHB
  nodeSelector: {nvidia.com/gpu.present: "true"}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
`)
	p, err := profile.Parse("p.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	r := loadRecipe(t, "qlora")
	b, err := Build(r, p, Options{Name: "exp-7", Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	j := b.Objects[0].(*kubeflowv1.PyTorchJob)
	if j.Name != "exp-7" || j.Namespace != "team" {
		t.Errorf("name/namespace %s/%s", j.Namespace, j.Name)
	}
	pod := j.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template
	if pod.Annotations[MultusAnnotation] != "default/rdma-net@net1" {
		t.Errorf("multus annotation %v", pod.Annotations)
	}
	c := pod.Spec.Containers[0]
	env := envMap(c)
	want := map[string]string{"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "106",
		"NCCL_SOCKET_IFNAME": "net1", "NCCL_NET_GDR_LEVEL": "PHB"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if q := c.Resources.Limits["nvidia.com/sriov_rdma"]; q.Value() != 2 {
		t.Errorf("sriov resource %v", c.Resources.Limits)
	}
	if pod.Spec.NodeSelector["nvidia.com/gpu.present"] != "true" || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("placement %v %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
}

// BenchmarkRender measures recipe load + profile + build + YAML encoding of the qlora recipe.
func BenchmarkRender(b *testing.B) {
	p := profile.Default()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r, err := recipe.Load("qlora", []string{"nodes=3"})
		if err != nil {
			b.Fatal(err)
		}
		bu, err := Build(r, p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Encode(bu.Objects, "yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
