package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ain-hpc/ain/pkg/ibport"
)

// The sandbox's IB port probe output is what ain's probe command prints over each scenario's
// simulated sysfs tree, run for real with sh and grep: port states, rates, GID tables with their
// types and netdevs come out of files, not out of a canned text.
func TestProbeRunsOverSimulatedSysfs(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"/bin/sh", "-c", ibport.SysfsDumpCommand}}}}}
	script, ok := runsProbe(pod)
	if !ok {
		t.Fatal("the preflight's probe pod is not recognised")
	}
	for _, c := range []struct {
		sample, state, rate string
		ready               bool
		gid                 int
	}{
		{"probe/sysfs-ib-active.txt", "ACTIVE", "200 Gb/sec (4X HDR)", true, -1},
		{"probe/sysfs-ib-init.txt", "INIT", "200 Gb/sec (4X HDR)", false, -1},
		{"probe/sysfs-roce-active.txt", "ACTIVE", "200 Gb/sec (4X HDR)", true, 3},
	} {
		desc, err := RenderSample(c.sample, SampleData{Pod: "p", Namespace: "ns", Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := runProbe(context.Background(), script, desc, t.TempDir(), "")
		if err != nil {
			t.Fatalf("%s: %v", c.sample, err)
		}
		if !strings.Contains(out, "/sys/class/infiniband/mlx5_0/ports/1/state:") {
			t.Fatalf("%s: the script printed no port: %q", c.sample, out)
		}
		rep, err := ibport.Parse(strings.NewReader(out))
		if err != nil || len(rep.Ports) == 0 {
			t.Fatalf("%s: %v %+v", c.sample, err, rep)
		}
		p := rep.Ports[0]
		if p.State != c.state || p.Rate == nil || *p.Rate != c.rate || rep.Ready != c.ready {
			t.Errorf("%s: state %s rate %v ready %v", c.sample, p.State, p.Rate, rep.Ready)
		}
		if (c.gid < 0) != (rep.GIDIndex == nil) || (rep.GIDIndex != nil && *rep.GIDIndex != c.gid) {
			t.Errorf("%s: gid %v want %d", c.sample, rep.GIDIndex, c.gid)
		}
	}
	// RoCE GIDs only on a host netdev: no usable GID for the pod, and the report says whose.
	desc, err := RenderSample("probe/sysfs-roce-host-gids.txt", SampleData{Pod: "p", Namespace: "ns", Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runProbe(context.Background(), script, desc, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ibport.Parse(strings.NewReader(out))
	if err != nil || !rep.Ready || rep.GIDIndex != nil || len(rep.ForeignGIDs) != 1 || !strings.Contains(rep.ForeignGIDs[0], "ens1f0np0") {
		t.Errorf("host GIDs: %v %+v", err, rep)
	}
	// A node with no RDMA device: the script prints no port, and that is not an error.
	out, _, err = runProbe(context.Background(), script, "/sys/class/net/eth0/ifindex:2\n", t.TempDir(), "")
	if err != nil || strings.Contains(out, "infiniband") || !strings.Contains(out, "/sys/class/net/eth0/ifindex:2") {
		t.Errorf("no device: %v %q", err, out)
	}
}

// A probe's termination message: the file its script wrote under the simulated container root
// (at the container's terminationMessagePath), cut to its last 4096 bytes as a kubelet reads it.
func TestProbeTerminationMessage(t *testing.T) {
	desc := "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\n"
	script := `grep -H . ${AIN_SYSFS_ROOT:-}/sys/class/infiniband/*/ports/*/state; echo done >"${AIN_SYSFS_ROOT:-}/dev/termination-log"`
	out, msg, err := runProbe(context.Background(), script, desc, t.TempDir(), "")
	if err != nil || !strings.Contains(out, "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE") || msg != "done\n" {
		t.Errorf("default path: %v %q %q", err, out, msg)
	}
	script = `i=0; while [ $i -lt 1000 ]; do echo line-$i; i=$((i+1)); done >"${AIN_SYSFS_ROOT:-}/var/msg"; echo /sys/class/infiniband`
	_, msg, err = runProbe(context.Background(), script, desc, t.TempDir(), "/var/msg")
	if err != nil || len(msg) != 4096 || !strings.HasSuffix(msg, "line-999\n") || strings.Contains(msg, "line-0\n") {
		t.Errorf("long message: %v, %d bytes, starts %q", err, len(msg), msg[:min(len(msg), 20)])
	}
	_, msg, err = runProbe(context.Background(), "true /sys/class/infiniband", desc, t.TempDir(), "")
	if err != nil || msg != "" {
		t.Errorf("nothing written: %v %q", err, msg)
	}
}

// FallbackToLogsOnError: the log's last 80 lines, at most 2048 bytes, only when the container
// failed and wrote nothing (k8s.io/kubernetes v1.37.2 kuberuntime).
func TestTerminationMessageFallback(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "l%02d\n", i)
	}
	long := strings.Repeat("x", 3000) + "\nlast\n"
	fallback := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}
	file := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	for _, c := range []struct {
		name    string
		c       *corev1.Container
		written string
		log     string
		exit    int
		want    string
	}{
		{"written wins", fallback, "mine", b.String(), 1, "mine"},
		{"succeeded: no fallback", fallback, "", b.String(), 0, ""},
		{"policy File: no fallback", file, "", b.String(), 2, ""},
		{"last 80 lines", fallback, "", b.String(), 1, b.String()[20*4:]},
		{"last 2048 bytes", fallback, "", long, 1, long[len(long)-2048:]},
		{"empty log", fallback, "", "", 1, ""},
	} {
		if got := terminationMessage(c.c, c.written, c.log, c.exit); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, trunc(got), trunc(c.want))
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:20] + "..." + s[len(s)-20:]
	}
	return s
}

// The succeed and fail stages put the agent's termination message into the first container's
// terminated state, byte for byte (kwok renders statusTemplate with Go's text/template and its
// Quote, which is json.Marshal: sigs.k8s.io/kwok v0.8.0 pkg/utils/gotpl/funcs.go), and nothing
// into the others'.
func TestStagesCarryTheTerminationMessage(t *testing.T) {
	raw, err := stagesYAML()
	if err != nil {
		t.Fatal(err)
	}
	msg := "ain-probe-result-begin\n/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\nquote \" colon: # {{ x }} \\ é\nain-probe-result-end\n"
	funcs := template.FuncMap{
		"Now": func() string { return "2026-12-03T17:00:00Z" },
		"Quote": func(s any) string {
			b, _ := json.Marshal(s)
			return string(b)
		},
	}
	for _, stage := range []string{"ain-pod-succeed", "ain-pod-fail"} {
		var tmpl string
		for doc := range strings.SplitSeq(string(raw), "\n---\n") {
			if strings.Contains(doc, "name: "+stage+"\n") {
				var st struct {
					Spec struct {
						Next struct {
							StatusTemplate string `json:"statusTemplate"`
						} `json:"next"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &st); err != nil {
					t.Fatal(err)
				}
				tmpl = st.Spec.Next.StatusTemplate
			}
		}
		tp, err := template.New(stage).Funcs(funcs).Parse(tmpl)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		for _, withMsg := range []bool{true, false} {
			ann := map[string]any{AnnoOutcome: "Succeeded", AnnoExitCode: "3"}
			if withMsg {
				ann[AnnoTerminationMessage] = msg
			}
			pod := map[string]any{
				"metadata": map[string]any{"generation": 1, "annotations": ann},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "probe", "image": "busybox"}, map[string]any{"name": "side", "image": "busybox"}}},
			}
			var b bytes.Buffer
			if err := tp.Execute(&b, pod); err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			var status corev1.PodStatus
			if err := yaml.UnmarshalStrict(b.Bytes(), &status); err != nil {
				t.Fatalf("%s: %v\n%s", stage, err, b.String())
			}
			cs := status.ContainerStatuses
			if len(cs) != 2 || cs[0].State.Terminated == nil || cs[1].State.Terminated == nil {
				t.Fatalf("%s: %+v", stage, cs)
			}
			want := ""
			if withMsg {
				want = msg
			}
			if got := cs[0].State.Terminated.Message; got != want || cs[1].State.Terminated.Message != "" {
				t.Errorf("%s: messages %q and %q, want %q and none", stage, got, cs[1].State.Terminated.Message, want)
			}
		}
	}
}

// kwok plays pod stages with one worker per 50 nodes, node stages with one per 100, at least its
// default 4 each.
func TestKwokOptions(t *testing.T) {
	for n, want := range map[int][2]uint{3: {4, 4}, 150: {4, 4}, 300: {6, 4}, 1000: {20, 10}} {
		var c struct {
			Kind    string `json:"kind"`
			Options struct {
				PodPlayStageParallelism  uint `json:"podPlayStageParallelism"`
				NodePlayStageParallelism uint `json:"nodePlayStageParallelism"`
			} `json:"options"`
		}
		if err := yaml.Unmarshal(bytes.TrimPrefix(kwokOptions(n), []byte("---\n")), &c); err != nil {
			t.Fatal(err)
		}
		if c.Kind != "KwokConfiguration" || c.Options.PodPlayStageParallelism != want[0] || c.Options.NodePlayStageParallelism != want[1] {
			t.Errorf("%d nodes: %+v", n, c)
		}
	}
}
