package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/figure"
	"github.com/ain-hpc/ain/pkg/openaiclient"
	"github.com/ain-hpc/ain/pkg/openaiclient/clienttest"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/servebench"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// servingResult runs ain's serving benchmark against a simulated vLLM server with the given
// first-token delay and writes its result in vLLM's format, as `ain bench serve --save-result`.
func servingResult(t *testing.T, dir, label string, firstToken time.Duration, concurrency int) string {
	t.Helper()
	_, url := clienttest.Start(t, vllmsim.Options{FirstTokenDelay: firstToken, TokenInterval: time.Millisecond})
	c := clienttest.NewClient(t, openaiclient.Options{Endpoint: url, MaxConns: 4})
	res, err := servebench.Run(context.Background(), c, servebench.Config{Model: "test-model", Requests: 12, MaxConcurrency: concurrency,
		InputLen: 16, OutputLen: 4, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(res.VLLMResult(label), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, label+".json")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestServingEntryAgainstDirect: two runs of one model under one load are compared (the entry's
// extra first-token time shows), a run under another load is said not to compare, and the
// paths without input are named.
func TestServingEntryAgainstDirect(t *testing.T) {
	dir := t.TempDir()
	direct := servingResult(t, dir, "direct", 5*time.Millisecond, 4)
	entry := servingResult(t, dir, "entry", 60*time.Millisecond, 4)
	other := servingResult(t, dir, "other-load", 5*time.Millisecond, 2)
	// vLLM writes a run where every request failed with 0 ms latencies: never compared.
	failed := filepath.Join(dir, "failed.json")
	if err := os.WriteFile(failed, []byte(`{"label":"down","model_id":"test-model","num_prompts":12,"max_concurrency":4,"request_rate":"inf","completed":0,"failed":12,"output_throughput":0,"median_ttft_ms":0,"p99_ttft_ms":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build([]Input{{direct, true}, {entry, true}, {other, true}, {failed, true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Comparisons) != 1 || !strings.HasPrefix(r.Comparisons[0], "serving entry against direct: TTFT median +") {
		t.Errorf("comparisons %q: want entry against direct with a slower first token", r.Comparisons)
	}
	if all := strings.Join(r.Disagreements, "\n"); len(r.Disagreements) != 3 || strings.Count(all, "different loads") != 2 || !strings.Contains(all, "down completed no request") {
		t.Errorf("disagreements %q", r.Disagreements)
	}
	var paths []string
	for _, m := range r.Missing {
		paths = append(paths, string(m.Path))
	}
	if got := strings.Join(paths, ","); got != "training,fabric,storage" {
		t.Errorf("missing %s", got)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, func(m Missing) string { return "run " + m.Measure }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"serving  TTFT median, entry", entry + " (entry, test-model, 12 prompts, concurrency 4, rate inf, ~", "missing storage: run preflight --read-throughput"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestSandboxResults reads a bench allreduce result folder and a bench rdma result written by
// ain on the sandbox (testdata/README.md): busbw against line rate, the bytes on each node's
// ports, perftest and TCP, and NCCL set beside perftest on the same fabric.
func TestSandboxResults(t *testing.T) {
	files, err := Files([]string{"testdata/sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(files)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = r.WriteText(&text, func(m Missing) string { return m.Measure })
	got := text.String()
	for _, want := range []string{"training  allreduce busbw peak, ring", "bytes sent on the RDMA ports of gpu-node-", "fabric    ib_write_bw bandwidth", "TCP baseline (iperf3)", "per NIC (1 GPU(s) per node drive 1 of the node's 2 NICs (each rank's nearest): the busbw limit counts 1), 97% of what ib_write_bw measured", "225% of the least any allreduce sends per node, 426.67 GiB"} {
		if !strings.Contains(got, want) {
			t.Errorf("text lacks %q:\n%s", want, got)
		}
	}
	if len(r.Disagreements) != 0 {
		t.Errorf("one sandbox run disagrees with itself: %q", r.Disagreements)
	}
}

// TestBadInputs: no result at all is ErrNoResults with each file's reason; a file over the bound
// is refused naming the bound; a folder that is not there names it.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.json")
	if err := os.WriteFile(readme, []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(text, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build([]Input{{readme, true}, {text, true}})
	if !errors.Is(err, ErrNoResults) || len(r.Skipped) != 2 || !strings.Contains(r.Skipped[1], "not JSON") {
		t.Errorf("err %v, skipped %q", err, r.Skipped)
	}
	// Found by walking the folder rather than named, the same files are passed over quietly.
	walked, err := Files([]string{dir})
	if err != nil || len(walked) != 2 || walked[0].Given {
		t.Fatalf("Files(dir) = %+v, %v", walked, err)
	}
	if r, err := Build(walked); !errors.Is(err, ErrNoResults) || len(r.Skipped) != 0 {
		t.Errorf("walked: err %v, skipped %q", err, r.Skipped)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var ie *InputError
	if _, err := Build([]Input{{big, true}}); !errors.As(err, &ie) || ie.Path != big || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Errorf("big file: %v", err)
	}
	if _, err := Files([]string{filepath.Join(dir, "nosuch")}); !errors.As(err, &ie) {
		t.Errorf("missing folder: %v", err)
	}
}

// TestPlot draws the sandbox results (a PNG that decodes) and refuses when nothing has a line rate.
func TestPlot(t *testing.T) {
	files, err := Files([]string{"testdata/sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(files)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Plot(&b, figure.Options{Format: "png"}); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if err := (&Report{Rows: []Row{{Path: Serving, Measure: "TTFT", Value: 3, Unit: "ms"}}}).Plot(io.Discard, figure.Options{Format: "png"}); !errors.Is(err, ErrNothingToPlot) {
		t.Errorf("serving only: %v", err)
	}
}

// TestOldResultDisagrees: a result saved by an ain that judged busbw against every HCA of a
// 1-GPU node ("47% of line rate") is judged again, and the report says so.
func TestOldResultDisagrees(t *testing.T) {
	r, err := Build([]Input{{Path: "testdata/old-nics/result.json", Given: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Disagreements) != 1 || !strings.Contains(r.Disagreements[0], "judged against 2 NICs per node by an older ain; judged again here: 1 GPU(s) per node drive 1") || !strings.Contains(r.Rows[0].Against, "x 1 NIC(s)") {
		t.Errorf("disagreements %q", r.Disagreements)
	}
}

// TestStorageRead: a preflight result with a read test (-o json of `ain preflight RECIPE
// --read-throughput`) gives a storage row with its claim and node, and storage is no longer
// missing; one without a read test, named by the user, is said to be skipped.
func TestStorageRead(t *testing.T) {
	dir := t.TempDir()
	res := preflight.Result{Cluster: "sandbox", Checks: []preflight.Check{
		{Name: preflight.CheckModel, Status: preflight.Pass, Message: "model ...", Read: &preflight.ModelRead{
			Claim: "nfs-shared", Path: "/shared/models/Qwen2.5-7B-Instruct", Node: "gpu-node-1", Files: 1, Bytes: 1 << 30, Seconds: 0.5, Direct: true}},
		{Name: preflight.CheckModel, Status: preflight.Pass, Message: "dataset ..."},
	}}
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withRead := write("storage.json", res)
	res.Checks = res.Checks[1:]
	without := write("plain.json", res)
	r, err := Build([]Input{{Path: withRead, Given: true}, {Path: without, Given: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 1 || r.Rows[0].Path != Storage || r.Rows[0].Value < 2.14 || r.Rows[0].Value > 2.15 || r.Rows[0].Unit != "GB/s" ||
		!strings.Contains(r.Rows[0].Source, "claim nfs-shared, node gpu-node-1") || !strings.Contains(r.Rows[0].Detail, "O_DIRECT") {
		t.Fatalf("rows %+v", r.Rows)
	}
	for _, m := range r.Missing {
		if m.Path == Storage {
			t.Errorf("storage said missing beside its row")
		}
	}
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "plain.json: a preflight result without a read test") {
		t.Errorf("skipped %q", r.Skipped)
	}
}

// TestPreflightKind: a preflight result is read by its kind (a sandbox's read marked as the
// sandbox's simulated volume) and, saved by an older ain, by its checks without one; a result of
// a newer ain's kind, named or found in a folder, is refused naming the file and the field; a
// file of another kind with checks is no preflight result.
func TestPreflightKind(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(sandbox bool) []preflight.Check {
		return []preflight.Check{{Name: preflight.CheckModel, Status: preflight.Pass, Read: &preflight.ModelRead{
			Claim: "nfs-shared", Path: "/shared/models/M", Node: "gpu-node-1", Files: 1, Bytes: 1 << 30, Seconds: 0.5, Direct: true, Sandbox: sandbox}}}
	}
	newer := write("newer.json", preflight.Result{Kind: "ain.dev/v1beta1/PreflightResult", Checks: read(false)})
	var ie *InputError
	var ve *VersionError
	_, err := Build([]Input{{Path: newer, Given: true}})
	if !errors.As(err, &ie) || ie.Path != newer || !errors.As(err, &ve) || !ve.Newer ||
		err.Error() != newer+`: field "kind" is ain.dev/v1beta1/PreflightResult: a result of a newer ain (this one reads ain.dev/v1alpha1/PreflightResult); report on it with that ain or a later one` {
		t.Errorf("newer version: %v", err)
	}
	if err := os.Remove(newer); err != nil {
		t.Fatal(err)
	}
	bench2 := write("bench.json", map[string]any{"kind": "ain.dev/v2/AllReduceBench"})
	if _, err := Build([]Input{{Path: bench2}}); !errors.As(err, &ve) || !ve.Newer || ve.Reads != "ain.dev/v1alpha1/AllReduceBench" {
		t.Errorf("a newer bench result found in a folder: %v", err)
	}
	if err := os.Remove(bench2); err != nil {
		t.Fatal(err)
	}
	current := write("current.json", preflight.Result{Kind: preflight.Kind, Checks: read(true)})
	old := write("old.json", map[string]any{"cluster": "https://10.0.0.1:6443", "checks": read(false)})
	other := write("other.json", map[string]any{"kind": "ain.dev/v1alpha1/Other", "checks": read(false)})
	files, err := Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(append(files, Input{Path: other, Given: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Source != current+" (preflight --read-throughput, claim nfs-shared, node gpu-node-1)" || r.Rows[1].Source != old+" (preflight --read-throughput, claim nfs-shared, node gpu-node-1)" {
		t.Fatalf("rows %+v", r.Rows)
	}
	if r.Rows[0].Measure != "model read, /shared/models/M (sandbox: simulated volume)" || !strings.Contains(r.Rows[0].Detail, "sandbox's sparse files") ||
		r.Rows[1].Measure != "model read, /shared/models/M" || strings.Contains(r.Rows[1].Detail, "sandbox") {
		t.Errorf("sandbox mark: %q (%s), %q (%s)", r.Rows[0].Measure, r.Rows[0].Detail, r.Rows[1].Measure, r.Rows[1].Detail)
	}
	if len(r.Skipped) != 1 || !strings.HasPrefix(r.Skipped[0], other+": not a result") {
		t.Errorf("skipped %q", r.Skipped)
	}
}
