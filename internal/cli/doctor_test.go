package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// runDoctorCLI runs the command tree in-process with the given stdin and returns the exit code,
// stdout and stderr.
func runDoctorCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &App{
		Streams: Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb},
		Now:     func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		Getenv:  func(string) string { return "" },
	}
	code := a.Run(context.Background(), append([]string{"ain"}, args...))
	return code, out.String(), errb.String()
}

func testdataPath(pkg, rel string) string {
	return filepath.Join("..", "..", "pkg", pkg, "testdata", rel)
}

func TestDoctorNCCLLog(t *testing.T) {
	// Socket fallback: verdict first, evidence with line numbers, fix; exit 5.
	code, out, _ := runDoctorCLI(t, "", "doctor", "nccl-log", testdataPath("nccl", "logs/socket-no-device.log"))
	if code != int(ainerr.CheckFailed) {
		t.Errorf("exit %d, want %d", code, ainerr.CheckFailed)
	}
	if !strings.HasPrefix(out, "PROBLEM: NCCL used TCP sockets") || !strings.Contains(out, "line 5: ") || !strings.Contains(out, "fix: ") {
		t.Errorf("output:\n%s", out)
	}
	// IB, JSON after the file (flags may follow positional arguments), exit 0.
	code, out, _ = runDoctorCLI(t, "", "doctor", "nccl-log", testdataPath("nccl", "logs/ib-2.18-interleaved.log"), "-o", "json")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"transport", "gdr", "ncclVersion", "ranks", "devices", "evidence", "warnings", "problems"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if r["transport"] != "ib" || r["gdr"] != true || r["ncclVersion"] != "2.18.3" || r["ranks"] != float64(2) {
		t.Errorf("JSON %v", r)
	}
	// Several files, one of them stdin.
	rank1, _ := os.ReadFile(testdataPath("nccl", "logs/hca-nomatch.log"))
	code, out, _ = runDoctorCLI(t, string(rank1), "doctor", "nccl-log", testdataPath("nccl", "logs/roce-2.21.log"), "-")
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "mixed-transport") || !strings.Contains(out, "stdin:") {
		t.Errorf("exit %d output:\n%s", code, out)
	}
}

func TestDoctorUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "nccl-log"},
		{"doctor", "nccl-log", "x.log", "-o", "yaml"},
		{"doctor", "launcher", "a.log", "b.log"},
		{"doctor", "ib-ports", "-", "-"},
		{"bench", "parse"},
		{"bench", "parse", "x", "-o", "xml"},
		{"bench", "model", "--nodes", "1", "--gpus-per-node", "8", "--link", "400Gb"},
		{"bench", "model", "--nodes", "2", "--gpus-per-node", "8", "--link", "fast"},
		{"bench", "model", "--nodes", "2", "--gpus-per-node", "8"},
		{"bench", "model", "--nodes", "2", "--gpus-per-node", "8", "--link", "400", "--algo", "nvls"},
	} {
		code, _, errOut := runDoctorCLI(t, "", args...)
		if code != int(ainerr.Usage) {
			t.Errorf("%v: exit %d, want %d (stderr %s)", args, code, ainerr.Usage, errOut)
		}
	}
	code, _, _ := runDoctorCLI(t, "", "doctor", "nccl-log", "/nonexistent/rank0.log")
	if code != int(ainerr.Failure) {
		t.Errorf("missing file: exit %d", code)
	}
}

func TestDoctorIBPorts(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "doctor", "ib-ports", testdataPath("ibport", "sysfs-roce-v2.txt"))
	if code != 0 || !strings.HasPrefix(out, "OK: all 2 port(s) ACTIVE") || !strings.Contains(out, "NCCL_IB_GID_INDEX=3") {
		t.Errorf("exit %d output:\n%s", code, out)
	}
	in, _ := os.ReadFile(testdataPath("ibport", "ibstat-init-no-sm.txt"))
	code, out, _ = runDoctorCLI(t, string(in), "doctor", "ib-ports", "-", "-o", "json")
	var r struct {
		Ports []struct {
			State, PhysState, Reason string
			Ready                    bool
		}
		Ready bool
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != int(ainerr.CheckFailed) || r.Ready || r.Ports[0].Reason != "no-subnet-manager" {
		t.Errorf("exit %d err %v: %s", code, err, out)
	}
}

func TestDoctorLauncher(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "doctor", "launcher", testdataPath("mpilauncher", "ompi-dns-before-workers.log"))
	if code != int(ainerr.CheckFailed) || !strings.HasPrefix(out, "PROBLEM: launcher-before-workers") || !strings.Contains(out, "line 1 [dns]") || !strings.Contains(out, "WaitForWorkersReady") {
		t.Errorf("exit %d output:\n%s", code, out)
	}
	code, out, _ = runDoctorCLI(t, "", "doctor", "launcher", "-o", "json", testdataPath("mpilauncher", "ompi-healthy-nccl-tests.log"))
	if code != 0 || !strings.Contains(out, `"verdict": "healthy"`) {
		t.Errorf("exit %d output:\n%s", code, out)
	}
}

func TestBenchParse(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "bench", "parse", testdataPath("nccl", "perf/concatenated-sendrecv-alltoall.txt"), "-o", "json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || code != 0 || len(runs) != 2 || runs[1]["collective"] != "alltoall_perf" {
		t.Errorf("exit %d err %v: %s", code, err, out)
	}
	code, out, _ = runDoctorCLI(t, "", "bench", "parse", "-o", "csv", testdataPath("nccl", "perf/all_gather-16ranks-g8.txt"))
	if code != 0 || strings.Count(out, "\n") != 7 || !strings.HasPrefix(out, "collective,size,") {
		t.Errorf("exit %d csv:\n%s", code, out)
	}
	code, out, _ = runDoctorCLI(t, "", "bench", "parse", testdataPath("nccl", "perf/all_reduce-wrong-failed.txt"))
	if code != int(ainerr.CheckFailed) || !strings.Contains(out, "2 out-of-bounds values") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, _, errOut := runDoctorCLI(t, "no table here\n", "bench", "parse", "-")
	if code != int(ainerr.Failure) || !strings.Contains(errOut, "no nccl-tests or perftest results") {
		t.Errorf("exit %d stderr %s", code, errOut)
	}
}

func TestBenchModel(t *testing.T) {
	code, out, _ := runDoctorCLI(t, "", "bench", "model", "--nodes", "3", "--gpus-per-node", "8", "--link", "400Gb", "-o", "json", "-b", "1M", "-e", "1G")
	var r struct {
		NRanks         int    `json:"nranks"`
		CrossoverBytes *int64 `json:"crossoverBytes"`
		Rows           []struct {
			Size int64
			Best string
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("exit %d err %v: %s", code, err, out)
	}
	if r.NRanks != 24 || r.CrossoverBytes == nil || *r.CrossoverBytes != 191567324 || len(r.Rows) != 11 {
		t.Errorf("model %+v", r)
	}
	code, out, _ = runDoctorCLI(t, "", "bench", "model", "--nodes", "2", "--gpus-per-node", "4", "--link", "200G", "--algo", "ring")
	if code != 0 || !strings.Contains(out, "ring: latency") || !strings.Contains(out, "RING TIME") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestParseLinkRateAndBytes(t *testing.T) {
	for in, want := range map[string]float64{"400Gb": 400, "400G": 400, "400": 400, "400Gbps": 400, "400Gb/s": 400, "200GbE": 200, "1.6Tb": 1600, "800Mb": 0.8} {
		if got, err := parseLinkRate(in); err != nil || got != want {
			t.Errorf("parseLinkRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1G", "fast", "G"} {
		if _, err := parseLinkRate(bad); err == nil {
			t.Errorf("parseLinkRate(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"8": 8, "1K": 1024, "64M": 64 << 20, "8G": 8 << 30, "1GiB": 1 << 30, "2KB": 2048} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "x", "99999999999T"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

// TestDoctorNodeProbeWithoutACluster: doctor topo/counters --node with no cluster configured
// say so with the cluster's exit code and advice (7, start the sandbox or give --kubeconfig),
// and a context that does not exist is a usage error (2), as every cluster command does.
func TestDoctorNodeProbeWithoutACluster(t *testing.T) {
	for _, cmd := range []string{"topo", "counters"} {
		code, _, errOut := runDoctorCLI(t, "", "doctor", cmd, "--node", "n1")
		if code != int(ainerr.Unreachable) || !strings.Contains(errOut, "ain sandbox up") {
			t.Errorf("doctor %s --node, no cluster: exit %d\n%s", cmd, code, errOut)
		}
		kubeconfig := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut = runDoctorCLI(t, "", "doctor", cmd, "--node", "n1", "--kubeconfig", kubeconfig, "--context", "nope")
		if code != int(ainerr.Usage) || !strings.Contains(errOut, "--context") {
			t.Errorf("doctor %s --node --context nope: exit %d\n%s", cmd, code, errOut)
		}
	}
}
