package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletPod is a worker pod as a Kubernetes 1.37 API server returns it once its kubelet has
// reported: conditions and status carry observedGeneration (KEP-5067: the kubelet sets it from
// 1.34, locked on from 1.35, so PodCondition's field order puts it between type and status), and
// the container status has what 1.37 writes (allocatedResources, resources, user, volumeMounts,
// started). gen 0 gives the pre-1.34 shape (no observedGeneration anywhere).
func kubeletPod(name string, ready bool, gen int64) *corev1.Pod {
	t0 := metav1.NewTime(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	cond := func(typ corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		c := corev1.PodCondition{Type: typ, ObservedGeneration: gen, Status: s, LastTransitionTime: t0}
		if s == corev1.ConditionFalse {
			c.Reason, c.Message = "ContainersNotReady", "containers with unready status: [mpi]"
		}
		return c
	}
	uid, gid := int64(0), int64(0)
	cpu := resource.MustParse("4")
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", Generation: max(gen, 1), UID: "5f0c1d0e-0000-4000-8000-000000000000",
			Annotations: map[string]string{
				// Multus writes JSON into a string: escaped quotes and braces the gate must not read as structure.
				"k8s.v1.cni.cncf.io/network-status": `[{"name":"default/rdma-net","interface":"net1","ips":["192.168.100.5"],"dns":{},"note":"{\"type\":\"Ready\",\"status\":\"True\"}"}]`,
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: MPIContainer, Image: "nccl-tests"}},
			// A readiness gate's conditionType is not a condition: only status.conditions count.
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "Ready"}},
		},
		Status: corev1.PodStatus{
			ObservedGeneration: gen,
			Phase:              corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue),
				cond(corev1.PodInitialized, corev1.ConditionTrue),
				cond(corev1.PodReady, st),
				cond(corev1.ContainersReady, st),
				cond(corev1.PodScheduled, corev1.ConditionTrue),
			},
			HostIP: "10.0.0.3", PodIP: "10.244.1.5", StartTime: &t0, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: MPIContainer, Ready: ready, Started: &ready, RestartCount: 0,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}},
				Image: "ghcr.io/coreweave/nccl-tests:12.4.1", ImageID: "ghcr.io/coreweave/nccl-tests@sha256:" + strings.Repeat("ab", 32),
				ContainerID:        "containerd://" + strings.Repeat("cd", 32),
				AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: cpu},
				Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}},
				User:               &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: uid, GID: gid, SupplementalGroups: []int64{0}}},
				VolumeMounts:       []corev1.VolumeMountStatus{{Name: ShmVolume, MountPath: "/dev/shm"}},
			}},
		},
	}
}

// fakePodsAPI serves GET /api/v1/namespaces/team-a/pods/NAME over TLS with a bearer token, the
// calls the gate makes to the API server; the pods can change while it runs.
type fakePodsAPI struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod
	gets int
}

func (f *fakePodsAPI) set(p *corev1.Pod) { f.mu.Lock(); f.pods[p.Name] = p; f.mu.Unlock() }

func (f *fakePodsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer launcher-token" {
		http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/team-a/pods/")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	p := f.pods[name]
	if !ok || p == nil {
		http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p)
}

// runGateScript runs script exactly as the launcher's init container would (command /bin/sh -c,
// the container's env), with the service-account files and the hostfile in a temp dir and the
// API server at srv.
func runGateScript(t *testing.T, gate corev1.Container, script string, srv *httptest.Server, timeout string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	if err := os.MkdirAll(sa, 0o755); err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, v := range map[string][]byte{"ca.crt": ca, "token": []byte("launcher-token"), "namespace": []byte("team-a")} {
		if err := os.WriteFile(filepath.Join(sa, name), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hf := filepath.Join(dir, "hostfile")
	if err := os.WriteFile(hf, []byte("gated-worker-0 slots=1\ngated-worker-1 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The container's command with its last argument (the script) replaced; a fresh slice, so the
	// rendered command is never written through.
	args := append(append([]string{}, gate.Command[1:len(gate.Command)-1]...), script)
	cmd := exec.CommandContext(ctx, gate.Command[0], args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
		"AIN_GATE_SA_DIR=" + sa, "AIN_GATE_HOSTFILE=" + hf}
	for _, e := range gate.Env {
		if e.Name == GateTimeoutEnv {
			e.Value = timeout // the pod's 600 s, shortened so a gate that never sees Ready fails in seconds
		}
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gate did not end: %s", out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

func renderedGate(t *testing.T) corev1.Container {
	t.Helper()
	job := render(t, "allreduce", "ib").Objects[0].(*kubeflowv1.MPIJob)
	g := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.InitContainers[0]
	if g.Name != GateContainer || len(g.Command) != 3 || g.Command[0] != "/bin/sh" || g.Command[1] != "-c" {
		t.Fatalf("gate container %+v", g)
	}
	return g
}

// TestGateScriptRunsAgainstKubelet137Status executes the rendered gate (defect 1 of the field
// review): on 1.37-shaped pod JSON it must see Ready workers, where the pre-fix gate, which
// matched "type":"Ready","status":"True" as text, times out and fails the launcher.
func TestGateScriptRunsAgainstKubelet137Status(t *testing.T) {
	if testing.Short() {
		t.Skip("runs shell processes against a local TLS server for several seconds")
	}
	for _, tool := range []string{"sh", "sed", "awk", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the gate needs it", tool)
		}
	}
	gate := renderedGate(t)
	old, err := os.ReadFile("testdata/gate/pre-kep5067-gate.sh")
	if err != nil {
		t.Fatal(err)
	}
	// The old script hard-coded the in-pod paths; move them the same way the new one allows.
	oldScript := strings.NewReplacer(
		"sa=/var/run/secrets/kubernetes.io/serviceaccount", `sa="$AIN_GATE_SA_DIR"`,
		"hf=/etc/mpi/hostfile", `hf="$AIN_GATE_HOSTFILE"`).Replace(string(old))

	api := &fakePodsAPI{pods: map[string]*corev1.Pod{}}
	srv := httptest.NewTLSServer(api)
	defer srv.Close()
	ready137 := func() {
		api.set(kubeletPod("gated-worker-0", true, 1))
		api.set(kubeletPod("gated-worker-1", true, 1))
	}

	t.Run("fixed gate sees 1.37 Ready workers", func(t *testing.T) {
		ready137()
		code, out := runGateScript(t, gate, gate.Command[2], srv, "20")
		if code != 0 || !strings.Contains(out, GateLogPrefix+" all 2 worker(s) Ready") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("pre-fix gate times out on 1.37 status", func(t *testing.T) {
		ready137()
		body, _ := json.Marshal(api.pods["gated-worker-0"])
		if !bytes.Contains(body, []byte(`"type":"Ready","observedGeneration":1,"status":"True"`)) {
			t.Fatalf("served pod is not shaped like a 1.37 kubelet's: %s", body)
		}
		code, out := runGateScript(t, gate, oldScript, srv, "3")
		if code != 1 || !strings.Contains(out, "timed out after 3s: workers not Ready: gated-worker-0 gated-worker-1") {
			t.Fatalf("want the old gate to fail, exit %d:\n%s", code, out)
		}
	})
	t.Run("pre-fix gate passed on pre-1.34 status", func(t *testing.T) {
		// Same server, same script: only observedGeneration differs.
		api.set(kubeletPod("gated-worker-0", true, 0))
		api.set(kubeletPod("gated-worker-1", true, 0))
		if code, out := runGateScript(t, gate, oldScript, srv, "3"); code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("fixed gate waits for a worker that is not Ready", func(t *testing.T) {
		// Worker 1 is not Ready; its annotation holds the escaped text of a Ready condition
		// and its spec a readiness gate named Ready: neither may count.
		api.set(kubeletPod("gated-worker-0", true, 2))
		api.set(kubeletPod("gated-worker-1", false, 2))
		code, out := runGateScript(t, gate, gate.Command[2], srv, "3")
		if code != 1 || !strings.Contains(out, "workers not Ready: gated-worker-1 (kubectl describe pod gated-worker-1)") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("fixed gate starts mpirun once the late worker is Ready", func(t *testing.T) {
		api.set(kubeletPod("gated-worker-0", true, 1))
		api.set(kubeletPod("gated-worker-1", false, 1))
		api.mu.Lock()
		api.gets = 0
		api.mu.Unlock()
		timer := time.AfterFunc(3*time.Second, func() { api.set(kubeletPod("gated-worker-1", true, 1)) })
		defer timer.Stop()
		code, out := runGateScript(t, gate, gate.Command[2], srv, "30")
		api.mu.Lock()
		gets := api.gets
		api.mu.Unlock()
		if code != 0 || !strings.Contains(out, "Ready after") || gets < 4 {
			t.Fatalf("exit %d after %d GETs:\n%s", code, gets, out)
		}
	})
	t.Run("no hostfile: not a launcher", func(t *testing.T) {
		g := gate
		g.Env = append(g.Env, corev1.EnvVar{Name: "AIN_GATE_HOSTFILE", Value: "/nonexistent/hostfile"})
		if code, out := runGateScript(t, g, gate.Command[2], srv, "3"); code != 0 || !strings.Contains(out, "not an MPIJob launcher") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}
