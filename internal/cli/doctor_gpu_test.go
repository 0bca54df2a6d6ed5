package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/internal/golden"
)

// TestDoctorGPU: the text report of each sample matches its golden (verdict line, the per-GPU
// table, the problems with their fixes), with exit 0 for the healthy node and 5 for the others;
// -o json has the report's fields; stdin and several files (one per node) read too.
func TestDoctorGPU(t *testing.T) {
	fail := int(ainerr.CheckFailed)
	for name, want := range map[string]int{"healthy-8gpu": 0, "xid79": fail, "throttled-thermal": fail, "idle-rank": fail} {
		code, out, errOut := runDoctorCLI(t, "", "doctor", "gpu", testdataPath("dcgm", name+".txt"))
		if code != want || errOut != "" {
			t.Errorf("%s: exit %d, want %d; stderr %q", name, code, want, errOut)
		}
		golden.File(t, "testdata/doctor-gpu-"+name+".txt", []byte(out))
	}

	b, err := os.ReadFile(testdataPath("dcgm", "idle-rank.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runDoctorCLI(t, string(b), "doctor", "gpu", "-", testdataPath("dcgm", "healthy-8gpu.txt"), "-o", "json")
	var r struct {
		OK       bool
		Hosts    int
		GPUs     []map[string]any
		Problems []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != int(ainerr.CheckFailed) || r.OK || r.Hosts != 2 || len(r.GPUs) != 16 || len(r.Problems) != 1 ||
		r.Problems[0]["kind"] != "idle_rank" || r.Problems[0]["host"] != "gpu-node-07" || r.Problems[0]["pod"] != "ml-team/llama-ft-node-0-5-p8v2k" {
		t.Errorf("exit %d, JSON %+v", code, r)
	}
	if g := r.GPUs[0]; g["gpu_util_pct"] != float64(97) || g["model"] != "NVIDIA H100 80GB HBM3" || g["pod"] != "bert-pretrain-worker-0" {
		t.Errorf("first GPU %v", g)
	}
}

// TestDoctorGPUNotAPage: input without DCGM metrics exits 5 and says what to give; bad arguments
// exit 2.
func TestDoctorGPUNotAPage(t *testing.T) {
	for in, want := range map[string]string{
		"# TYPE node_load1 gauge\nnode_load1 0.5\n": "error: stdin: no DCGM metrics (DCGM_FI_*) in it",
		"":                                      "error: stdin: no DCGM metrics",
		"<html><title>Prometheus</title>\n":     "error: stdin: not the Prometheus text format: text format parsing error in line 1",
		`{"status":"success","data":{}}` + "\n": "not the Prometheus text format",
	} {
		code, _, errOut := runDoctorCLI(t, in, "doctor", "gpu", "-")
		if code != int(ainerr.CheckFailed) || !strings.Contains(errOut, want) || !strings.Contains(errOut, "app=nvidia-dcgm-exporter") {
			t.Errorf("%q: exit %d, stderr %s", in, code, errOut)
		}
	}
	if code, _, _ := runDoctorCLI(t, "", "doctor", "gpu"); code != int(ainerr.Usage) {
		t.Errorf("no file: exit %d", code)
	}
	if code, _, _ := runDoctorCLI(t, "", "doctor", "gpu", "x", "-o", "yaml"); code != int(ainerr.Usage) {
		t.Errorf("-o yaml: exit %d", code)
	}
	if code, _, _ := runDoctorCLI(t, "", "doctor", "gpu", "/no/such/file"); code != int(ainerr.Failure) {
		t.Errorf("missing file: exit %d", code)
	}
}

// TestDoctorGPUPrometheus: --prometheus --node reads the nodes' DCGM series from a Prometheus
// server's /federate (no cluster asked), judged as a page; a node it lacks is a warning beside
// the others; a URL that is not one, or a FILE with it, is a usage error naming the flag.
func TestDoctorGPUPrometheus(t *testing.T) {
	page, err := os.ReadFile(testdataPath("dcgm", "healthy-8gpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/federate" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	code, out, errOut := runDoctorCLI(t, "", "doctor", "gpu", "--prometheus", srv.URL, "--node", "dgx-h100-01,gpu-node-9")
	if code != 0 || !strings.HasPrefix(out, "OK") || strings.Count(out, "dgx-h100-01") < 8 ||
		!strings.Contains(errOut, "has no DCGM series of [gpu-node-9]") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"doctor", "gpu", "--prometheus", "prometheus:9090", "--node", "n"},
		{"doctor", "gpu", "--prometheus", srv.URL, testdataPath("dcgm", "healthy-8gpu.txt")},
	} {
		if code, _, errOut := runDoctorCLI(t, "", args...); code != int(ainerr.Usage) || !strings.Contains(errOut, "--prometheus") {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}
}
