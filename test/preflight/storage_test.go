package preflight_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/report"
)

// modelChecks are the result's model checks.
func modelChecks(r *preflight.Result) []preflight.Check {
	var out []preflight.Check
	for _, c := range r.Checks {
		if c.Name == preflight.CheckModel {
			out = append(out, c)
		}
	}
	return out
}

// The shared claim presents a complete model, the dataset and a writable output directory: the
// storage probe (a pod mounting the claim, its script run over the claim's simulated content)
// passes every path of the qlora recipe, and of the vllm recipe's model.
func TestStorageProbeHealthy(t *testing.T) {
	sb, ns := setup(t, "healthy")
	_, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "-o", "json")
	checks := modelChecks(decode(t, out))
	want := []string{
		"model /shared/models/Qwen2.5-7B-Instruct on claim nfs-shared", "4 of 4 shards of model.safetensors.index.json (15.2 GB)",
		"dataset /shared/datasets/course-qa on claim nfs-shared", "a directory of 2 entries",
		"output /shared/adapters/qlora-qwen2.5-7b on claim nfs-shared", "writable as uid 0", "free of 11.0 TB",
	}
	if len(checks) != 3 {
		t.Fatalf("want 3 model checks (model, dataset, output), got %+v", checks)
	}
	var all strings.Builder
	for _, c := range checks {
		if c.Status != preflight.Pass {
			t.Errorf("%s %s: %s (%s)", c.Status, c.Target, c.Message, c.Fix)
		}
		all.WriteString(c.Message + "\n")
	}
	for _, w := range want {
		if !strings.Contains(all.String(), w) {
			t.Errorf("%q not in the model checks:\n%s", w, all.String())
		}
	}
	noProbePods(t, sb, ns)
}

// --read-throughput: the probe reads the first 64 MiB of the model's shards with the machine's own
// dd (the sandbox's shards are sparse files of their real sizes) and the model check, in text
// and in JSON, carries the figure and where it was measured.
func TestStorageProbeReadThroughput(t *testing.T) {
	sb, ns := setup(t, "healthy")
	code, out, errOut := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "--read-throughput", "64M", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var r *preflight.ModelRead
	for _, c := range modelChecks(decode(t, out)) {
		if c.Read != nil {
			r = c.Read
			if !strings.Contains(c.Message, "read 67.1 MB of 1 weight file(s)") {
				t.Errorf("message: %s", c.Message)
			}
		}
	}
	if r == nil || r.Bytes != 64<<20 || r.Files != 1 || r.Seconds <= 0 || r.Claim != "nfs-shared" ||
		r.Path != "/shared/models/Qwen2.5-7B-Instruct" || !strings.HasPrefix(r.Node, "gpu-node-") {
		t.Fatalf("read: %+v", r)
	}
	// --save-result keeps the same JSON beside the text, for ain report.
	saved := filepath.Join(t.TempDir(), "storage.json")
	code, text, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "--read-throughput", "16M", "--save-result", saved)
	b, err := os.ReadFile(saved)
	if code != 0 || err != nil || !strings.Contains(text, "read 16.8 MB of 1 weight file(s)") {
		t.Fatalf("exit %d, %v\n%s", code, err, text)
	}
	found := false
	savedRes := decode(t, string(b))
	for _, c := range modelChecks(savedRes) {
		found = found || c.Read != nil && c.Read.Bytes == 16<<20 && c.Read.Sandbox
	}
	if !found || savedRes.Kind != preflight.Kind {
		t.Errorf("the saved result lacks its kind or the read (marked as the sandbox's):\n%s", b)
	}
	// ain report reads it as a storage row on the sandbox's simulated volume.
	rep, err := report.Build([]report.Input{{Path: saved, Given: true}})
	if err != nil || len(rep.Rows) != 1 || rep.Rows[0].Measure != "model read, /shared/models/Qwen2.5-7B-Instruct (sandbox: simulated volume)" {
		t.Errorf("report: %v %+v", err, rep)
	}
	code, _, errOut = ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "--read-throughput", "12")
	if code != 2 || !strings.Contains(errOut, "--read-throughput \"12\": give a size of at least 1M") {
		t.Errorf("a size under 1 MiB: exit %d\n%s", code, errOut)
	}
	noProbePods(t, sb, ns)
}

// A half-copied model on a read-only export: the preflight FAILs naming the claim, the path, the
// missing shard and the fix, and `ain train` is refused before anything is applied.
func TestStorageProbeBroken(t *testing.T) {
	sb, ns := setup(t, "storage-broken")
	e := newEnv(t)
	code, out, _ := ain(t, context.Background(), sb, e, ns, "preflight", "qlora", "-o", "json")
	if code != int(ainerr.PreflightFailed) {
		t.Errorf("preflight qlora: exit %d, want %d", code, ainerr.PreflightFailed)
	}
	checks := modelChecks(decode(t, out))
	if len(checks) != 3 {
		t.Fatalf("want 3 model checks, got %+v", checks)
	}
	m, d, o := checks[0], checks[1], checks[2]
	if m.Status != preflight.Fail || m.Target != "nfs-shared:/shared/models/Qwen2.5-7B-Instruct" ||
		!strings.Contains(m.Message, "1 of 4 weight files missing: model-00003-of-00004.safetensors") || !strings.Contains(m.Fix, "hf download") {
		t.Errorf("model: %+v", m)
	}
	if d.Status != preflight.Pass {
		t.Errorf("dataset: %+v", d)
	}
	if o.Status != preflight.Fail || !strings.Contains(o.Message, "Read-only file system") || !strings.Contains(o.Message, "/shared/adapters") ||
		!strings.Contains(o.Fix, "claim nfs-shared is read-only") {
		t.Errorf("output: %+v", o)
	}
	code, _, errOut := ain(t, context.Background(), sb, e, ns, "train", "qlora", "--timeout", "1m")
	if code != int(ainerr.PreflightFailed) || !strings.Contains(errOut, "model-00003-of-00004.safetensors") {
		t.Errorf("train qlora: exit %d, want %d with the missing shard named", code, ainerr.PreflightFailed)
	}
	noProbePods(t, sb, ns)
}

// A serving recipe's model (spec.model) is probed the same way.
func TestStorageProbeServing(t *testing.T) {
	sb, ns := setup(t, "storage-broken")
	code, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "vllm", "-o", "json")
	if code != int(ainerr.PreflightFailed) {
		t.Errorf("preflight vllm: exit %d, want %d", code, ainerr.PreflightFailed)
	}
	checks := modelChecks(decode(t, out))
	if len(checks) != 1 || checks[0].Status != preflight.Fail || !strings.Contains(checks[0].Message, "(spec.model): 1 of 4 weight files missing") {
		t.Errorf("want one FAIL for spec.model, got %+v", checks)
	}
}
