package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/profile"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// qwenFiles is a model directory shaped like Qwen2.5-7B-Instruct's (four safetensors shards
// named by the index, a BPE tokenizer), with the shards as sparse files.
var qwenFiles = map[string]int64{
	"config.json": 663, "generation_config.json": 243, "tokenizer.json": 7031645, "tokenizer_config.json": 7305,
	"vocab.json": 2776833, "merges.txt": 1671839, "LICENSE": 11343, "README.md": 6106,
	"model-00001-of-00004.safetensors": 3945441440, "model-00002-of-00004.safetensors": 3864726320,
	"model-00003-of-00004.safetensors": 3864726424, "model-00004-of-00004.safetensors": 3556377672,
}

func qwenIndex() []byte {
	wm := map[string]string{
		"lm_head.weight":                                  "model-00004-of-00004.safetensors",
		"model.embed_tokens.weight":                       "model-00001-of-00004.safetensors",
		"model.layers.0.self_attn.q_proj.weight":          "model-00001-of-00004.safetensors",
		"model.layers.9.mlp.down_proj.weight":             "model-00002-of-00004.safetensors",
		"model.layers.18.self_attn.o_proj.weight":         "model-00003-of-00004.safetensors",
		"model.layers.27.post_attention_layernorm.weight": "model-00004-of-00004.safetensors",
		"model.norm.weight":                               "model-00004-of-00004.safetensors",
	}
	b, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": 15231233024}, "weight_map": wm}, "", "  ")
	return b
}

// writeModelTree writes a model directory, a dataset and an output parent under root+/shared,
// leaving out the files in skip.
func writeModelTree(t *testing.T, root string, skip ...string) {
	t.Helper()
	m := filepath.Join(root, "shared/models/Qwen2.5-7B-Instruct")
	for _, d := range []string{m, filepath.Join(root, "shared/datasets/course-qa"), filepath.Join(root, "shared/adapters")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, size := range qwenFiles {
		if strings.Contains(strings.Join(skip, " "), name) {
			continue
		}
		f, err := os.Create(filepath.Join(m, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := os.WriteFile(filepath.Join(m, "model.safetensors.index.json"), qwenIndex(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "shared/datasets/course-qa/train.jsonl"), []byte(`{"messages": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

var qloraPaths = []recipe.DataPath{
	{Kind: recipe.DataModel, Path: "/shared/models/Qwen2.5-7B-Instruct", Field: "spec.command --model_name_or_path"},
	{Kind: recipe.DataDataset, Path: "/shared/datasets/course-qa", Field: "spec.command --dataset_name"},
	{Kind: recipe.DataOutput, Path: "/shared/adapters/qlora-qwen2.5-7b", Field: "spec.command --output_dir"},
}

var sharedVol = &recipe.Volume{Name: "shared", ClaimName: "nfs-shared", MountPath: "/shared"}

func qloraClaims() map[string]*recipe.Volume {
	m := map[string]*recipe.Volume{}
	for _, p := range qloraPaths {
		m[p.Path] = sharedVol
	}
	return m
}

// runStorageScript runs the probe's own script with /bin/sh over root, as the sandbox does.
func runStorageScript(t *testing.T, root string) []byte {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", probe.ResultCommand(storageScript("t1", qloraPaths, 0, time.Minute)))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	return out
}

func TestStorageScriptComplete(t *testing.T) {
	root := t.TempDir()
	writeModelTree(t, root)
	out := runStorageScript(t, root)
	if os.Getenv("AIN_WRITE_SAMPLES") != "" {
		_ = os.WriteFile("testdata/storage/complete.txt", out, 0o644)
	}
	rep, err := ParseStorageReport(out)
	if err != nil || !rep.Complete {
		t.Fatalf("parse: %v (complete %v)\n%s", err, rep != nil && rep.Complete, out)
	}
	checks := JudgeStorage(rep, qloraPaths, qloraClaims())
	if len(checks) != 3 {
		t.Fatalf("want 3 checks, got %+v", checks)
	}
	for _, c := range checks {
		if c.Status == Fail {
			t.Errorf("FAIL on a complete tree: %+v", c)
		}
		if strings.Contains(c.Message, root) {
			t.Errorf("message shows the simulated root %s: %s", root, c.Message)
		}
	}
	if m := checks[0].Message; !strings.Contains(m, "4 of 4 shards") || !strings.Contains(m, "15.2 GB") {
		t.Errorf("model message: %s", m)
	}
}

func TestStorageScriptMissingShard(t *testing.T) {
	root := t.TempDir()
	writeModelTree(t, root, "model-00003-of-00004.safetensors")
	if err := os.RemoveAll(filepath.Join(root, "shared/datasets/course-qa")); err != nil {
		t.Fatal(err)
	}
	out := runStorageScript(t, root)
	if os.Getenv("AIN_WRITE_SAMPLES") != "" {
		_ = os.WriteFile("testdata/storage/missing-shard.txt", out, 0o644)
	}
	rep, err := ParseStorageReport(out)
	if err != nil {
		t.Fatal(err)
	}
	checks := JudgeStorage(rep, qloraPaths, qloraClaims())
	m, d := checks[0], checks[1]
	if m.Status != Fail || !strings.Contains(m.Message, "1 of 4 weight files missing: model-00003-of-00004.safetensors") ||
		!strings.Contains(m.Message, "nfs-shared") || !strings.Contains(m.Fix, "hf download") {
		t.Errorf("model check: %+v", m)
	}
	if d.Status != Fail || !strings.Contains(d.Message, "/shared/datasets/course-qa") || !strings.Contains(d.Message, "does not exist") {
		t.Errorf("dataset check: %+v", d)
	}
}

func TestJudgeStorageSamples(t *testing.T) {
	cases := []struct {
		file  string
		want  []Status
		words []string
	}{
		{"complete.txt", []Status{Pass, Pass, ""}, []string{"complete and readable as uid 0"}},
		{"missing-shard.txt", []Status{Fail, Fail, ""}, []string{"model-00003-of-00004.safetensors", "does not exist"}},
		{"readonly-output.txt", []Status{Pass, Pass, Fail}, []string{"Read-only file system", "readOnly: false"}},
		{"lfs-pointers.txt", []Status{Fail, Pass, Pass}, []string{"Git LFS pointers", "git lfs pull", "not readable: tokenizer.json"}},
	}
	for _, tc := range cases {
		data, err := os.ReadFile(filepath.Join("testdata/storage", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ParseStorageReport(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		claims := qloraClaims()
		if strings.HasPrefix(tc.file, "readonly") {
			ro := *sharedVol
			ro.ReadOnly = true
			claims[qloraPaths[2].Path] = &ro
		}
		checks := JudgeStorage(rep, qloraPaths, claims)
		var all strings.Builder
		for i, c := range checks {
			fmt.Fprintf(&all, "%s %s %s %s\n", c.Status, c.Message, c.Evidence, c.Fix)
			if tc.want[i] != "" && c.Status != tc.want[i] {
				t.Errorf("%s: check %d is %s, want %s: %s", tc.file, i, c.Status, tc.want[i], c.Message)
			}
			if c.Status != Pass && (!strings.Contains(c.Message, "nfs-shared") || c.Fix == "") {
				t.Errorf("%s: a non-PASS check must name the claim and a fix: %+v", tc.file, c)
			}
		}
		for _, w := range tc.words {
			if !strings.Contains(all.String(), w) {
				t.Errorf("%s: %q not in\n%s", tc.file, w, all.String())
			}
		}
	}
}

func TestParseStorageReportNotRun(t *testing.T) {
	if _, err := ParseStorageReport([]byte("sh: dd: not found\n")); err == nil {
		t.Error("output without the format line parsed")
	}
}

func TestModelProblemsIndex(t *testing.T) {
	base := func() *StoragePath {
		return &StoragePath{Type: "d", Entries: []StorageEntry{{"config.json", true, 600}, {"tokenizer.model", true, 500000}}, IndexName: "model.safetensors.index.json"}
	}
	p := base()
	p.Index = []byte(`{"weight_map": {"a": "model-00001-of-00002.safe`)
	if pr, _ := ModelProblems(p); len(pr) != 1 || !strings.Contains(pr[0], "not valid JSON") {
		t.Errorf("truncated index: %v", pr)
	}
	p = base()
	p.IndexSize = maxIndexBytes + 1
	if pr, _ := ModelProblems(p); len(pr) != 1 || !strings.Contains(pr[0], "were not checked") {
		t.Errorf("huge index: %v", pr)
	}
	p = base()
	p.IndexName = ""
	p.Entries = append(p.Entries, StorageEntry{"model.safetensors", true, 988097824})
	if pr, found := ModelProblems(p); len(pr) != 0 || !strings.Contains(found, "model.safetensors (988.1 MB)") {
		t.Errorf("single file: %v %s", pr, found)
	}
	p.Entries = p.Entries[:1]
	if pr, _ := ModelProblems(p); len(pr) != 2 {
		t.Errorf("no tokenizer, no weights: %v", pr)
	}
}

func FuzzParseStorageReport(f *testing.F) {
	files, _ := filepath.Glob("testdata/storage/*.txt")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(storageFormat + "\nP model /m\nT d\nI 99999999999 model.safetensors.index.json\n| {\nE r x y\nF a b\n"))
	f.Add([]byte(storageFormat + "\nP model /m\nT d\nX d 1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.01 s, 100 MB/s\nXF a b.safetensors\nX c\nXF\nX\nEND\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := ParseStorageReport(b)
		if err != nil {
			return
		}
		paths := make([]recipe.DataPath, 0, len(rep.Paths))
		claim := map[string]*recipe.Volume{}
		for _, p := range rep.Paths {
			paths = append(paths, recipe.DataPath{Kind: recipe.DataKind(p.Kind), Path: p.Path})
			claim[p.Path] = sharedVol
		}
		for _, c := range JudgeStorage(rep, paths, claim) {
			if c.Status != Pass && c.Fix == "" && c.Status != "" {
				t.Fatalf("a %s check without a fix: %+v", c.Status, c)
			}
		}
	})
}

func TestJudgeStorageHugeIndexWarns(t *testing.T) {
	rep := &StorageReport{UID: "0", Paths: []StoragePath{{Kind: "model", Path: qloraPaths[0].Path, Type: "d",
		Entries:   []StorageEntry{{"config.json", true, 600}, {"tokenizer.json", true, 7000000}},
		IndexName: "model.safetensors.index.json", IndexSize: maxIndexBytes + 1}}}
	c := JudgeStorage(rep, qloraPaths[:1], qloraClaims())
	if len(c) != 1 || c[0].Status != Warn || !strings.Contains(c[0].Message, "were not checked") || c[0].Fix == "" {
		t.Errorf("%+v", c)
	}
}

// TestStorageScriptSymlinksAndNoLeftover: a model directory of symlinks (the Hugging Face cache's
// snapshots/<rev>/ links into blobs/) is read through them, and the write test leaves no file in
// the output directory.
func TestStorageScriptSymlinksAndNoLeftover(t *testing.T) {
	root := t.TempDir()
	writeModelTree(t, root)
	model := filepath.Join(root, qloraPaths[0].Path)
	blobs := filepath.Join(root, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		blob := filepath.Join(blobs, e.Name())
		if err := os.Rename(filepath.Join(model, e.Name()), blob); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(blob, filepath.Join(model, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ParseStorageReport(runStorageScript(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range JudgeStorage(rep, qloraPaths, qloraClaims()) {
		if c.Status == Fail {
			t.Errorf("FAIL through symlinks: %+v", c)
		}
	}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".ain-probe-write") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStoragePodCapabilities: for a training job the probe keeps the runtime's default
// capabilities as the ranks do (a 0600 file root can read through CAP_DAC_OVERRIDE is not a
// false FAIL); for serving it drops them all, as the vLLM pods do.
func TestStoragePodCapabilities(t *testing.T) {
	pl, _ := planStorage(Storage{Mounts: []recipe.Volume{*sharedVol}, Paths: qloraPaths})
	o := Options{Namespace: "ns", ProbeImage: "busybox:1.36", ProbeTimeout: time.Minute, Profile: profile.Default()}
	o.Storage.DefaultCapabilities = true
	if sc := storagePod(o, "r1", pl, nil).Spec.Containers[0].SecurityContext; sc == nil || sc.Capabilities != nil {
		t.Errorf("training: %+v, want the runtime's default capabilities", sc)
	}
	o.Storage.DefaultCapabilities = false
	if sc := storagePod(o, "r1", pl, nil).Spec.Containers[0].SecurityContext; sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 {
		t.Errorf("serving: %+v, want ALL dropped", sc)
	}
}

// TestClaimProbeNode: an unbound claim is not probed; a ReadWriteOnce claim in use on another
// node sends the probe there when it is a candidate, else is not probed, naming the pod; a
// ReadWriteMany claim goes where planned.
func TestClaimProbeNode(t *testing.T) {
	pvc := func(name string, phase corev1.PersistentVolumeClaimPhase, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase, AccessModes: []corev1.PersistentVolumeAccessMode{mode}}}
	}
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: "n2", Volumes: []corev1.Volume{{Name: "m", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "rwo"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fake.NewSimpleClientset(pvc("pending", corev1.ClaimPending, corev1.ReadWriteMany), pvc("rwo", corev1.ClaimBound, corev1.ReadWriteOnce),
		pvc("rwx", corev1.ClaimBound, corev1.ReadWriteMany), user)
	o := Options{Kube: cs, Namespace: "ns"}
	n1, n2 := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	ctx := context.Background()
	if _, c := claimProbeNode(ctx, o, "pending", &n1, []corev1.Node{n1}); c == nil || c.Status != Warn || !strings.Contains(c.Message, "Pending") {
		t.Errorf("pending: %+v", c)
	}
	if n, c := claimProbeNode(ctx, o, "rwo", &n1, []corev1.Node{n1, n2}); c != nil || n == nil || n.Name != "n2" {
		t.Errorf("rwo with n2 a candidate: %v %+v", n, c)
	}
	if _, c := claimProbeNode(ctx, o, "rwo", &n1, []corev1.Node{n1}); c == nil || !strings.Contains(c.Message, "vllm-0") || !strings.Contains(c.Message, "Multi-Attach") {
		t.Errorf("rwo elsewhere: %+v", c)
	}
	if n, c := claimProbeNode(ctx, o, "rwx", &n1, []corev1.Node{n1}); c != nil || n.Name != "n1" {
		t.Errorf("rwx: %v %+v", n, c)
	}
}

// TestModelLayouts: Mistral's own format, a PEFT adapter and XLM-R's SentencePiece tokenizer are
// complete models (they were false FAILs); a GPT-2 style vocab.json without merges.txt is not.
func TestModelLayouts(t *testing.T) {
	dir := func(names ...string) *StoragePath {
		p := &StoragePath{Type: "d"}
		for _, n := range names {
			p.Entries = append(p.Entries, StorageEntry{Name: n, Readable: true, Size: 1 << 30})
		}
		return p
	}
	for name, c := range map[string]struct {
		p    *StoragePath
		want string // "" complete, else a problem's substring
	}{
		"mistral":      {dir("params.json", "tekken.json", "consolidated.safetensors"), ""},
		"mistral-none": {dir("params.json", "tekken.json"), "no consolidated"},
		"peft":         {dir("adapter_config.json", "adapter_model.safetensors", "README.md"), ""},
		"peft-none":    {dir("adapter_config.json"), "no adapter weights"},
		"xlmr":         {dir("config.json", "sentencepiece.bpe.model", "model.safetensors"), ""},
		"gpt2-merges":  {dir("config.json", "vocab.json", "merges.txt", "model.safetensors"), ""},
		"gpt2-alone":   {dir("config.json", "vocab.json", "model.safetensors"), "without merges.txt"},
	} {
		problems, _ := ModelProblems(c.p)
		got := strings.Join(problems, "; ")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q", name, got, c.want)
		}
	}
}

// TestStorageScriptReadThroughput runs the probe's read test with the machine's own dd over a
// model of two 3 MiB shards and a 5 MiB budget: reads are 16 MiB requests, so both shards whole
// (the first leaves 2 MiB to read), each timed, and the model check carries the figure.
func TestStorageScriptReadThroughput(t *testing.T) {
	root := t.TempDir()
	m := filepath.Join(root, "shared/models/small")
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	shard := bytes.Repeat([]byte{7}, 3<<20)
	for _, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
		if err := os.WriteFile(filepath.Join(m, name), shard, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index := `{"metadata": {"total_size": 6291456}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}`
	for name, text := range map[string]string{"config.json": "{}", "tokenizer.json": "{}", "model.safetensors.index.json": index} {
		if err := os.WriteFile(filepath.Join(m, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := []recipe.DataPath{{Kind: recipe.DataModel, Path: "/shared/models/small", Field: "spec.model"}}
	cmd := exec.Command("/bin/sh", "-c", probe.ResultCommand(storageScript("t1", paths, 5<<20, time.Minute)))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	rep, err := ParseStorageReport(out)
	if err != nil || len(rep.Paths) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	reads := rep.Paths[0].Reads
	if len(reads) != 2 || reads[0].Name != "model-00001-of-00002.safetensors" || reads[0].Bytes != 3<<20 || reads[1].Bytes != 3<<20 {
		t.Fatalf("reads %+v\n%s", reads, out)
	}
	checks := JudgeStorage(rep, paths, map[string]*recipe.Volume{"/shared/models/small": sharedVol})
	r := checks[0].Read
	if r == nil || r.Files != 2 || r.Bytes != 6<<20 || r.Seconds <= 0 || r.Claim != "nfs-shared" || r.BytesPerSecond() <= 0 {
		t.Fatalf("read %+v", r)
	}
	if !strings.Contains(checks[0].Message, "read 6.3 MB of 2 weight file(s)") || !strings.Contains(checks[0].Message, "a lower bound") {
		t.Errorf("message: %s", checks[0].Message)
	}
	if !r.Sandbox {
		t.Errorf("read under $AIN_SYSFS_ROOT (the sandbox's simulated root) not marked sandbox: %+v", r)
	}
	// As a pod runs it: no $AIN_SYSFS_ROOT, the model at its own path; the read is a real one.
	paths[0].Path = m
	cmd = exec.Command("/bin/sh", "-c", probe.ResultCommand(storageScript("t1", paths, 5<<20, time.Minute)))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	if rep, err = ParseStorageReport(out); err != nil {
		t.Fatal(err)
	}
	if r := JudgeStorage(rep, paths, map[string]*recipe.Volume{m: sharedVol})[0].Read; r == nil || r.Files != 2 || r.Sandbox {
		t.Errorf("read in a pod: %+v\n%s", r, out)
	}
}

// TestParseRead: dd's summary line as GNU coreutils, busybox and a decimal-comma locale print it,
// and a dd that prints no rate line.
func TestParseRead(t *testing.T) {
	for _, c := range []struct {
		line  string
		bytes int64
		secs  float64
	}{
		{"1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.357 s, 3.0 GB/s", 1 << 30, 0.357},
		{"1073741824 bytes (1.0GB) copied, 0.356213 seconds, 2.8GB/s", 1 << 30, 0.356213},
		{"1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,357 s, 3,0 GB/s", 0, 0}, // a German dd: not read
		{"1048576 bytes (1.0 MB, 1.0 MiB) copied, 1,5 s, 699 kB/s", 1 << 20, 1.5},
		{"1024+0 records out", 0, 0},
	} {
		r := parseRead(true, c.line)
		if r.Bytes != c.bytes || r.Seconds != c.secs || r.Summary != c.line {
			t.Errorf("%q: %+v", c.line, r)
		}
	}
}

// TestStorageScriptReadCutAndNothing: a read test whose time budget is spent names the file it
// cut, and one with no weight file says so; the other checks still ran (the reads come last).
func TestStorageScriptReadCutAndNothing(t *testing.T) {
	root := t.TempDir()
	writeModelTree(t, root)
	empty := filepath.Join(root, "shared/models/empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := append([]recipe.DataPath{{Kind: recipe.DataModel, Path: "/shared/models/empty", Field: "spec.model"}}, qloraPaths...)
	cmd := exec.Command("/bin/sh", "-c", probe.ResultCommand(storageScript("t1", paths, 64<<20, 0)))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AIN_SYSFS_ROOT=" + root}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	rep, err := ParseStorageReport(out)
	if err != nil || !rep.Complete {
		t.Fatalf("%v\n%s", err, out)
	}
	claims := qloraClaims()
	claims["/shared/models/empty"] = sharedVol
	checks := JudgeStorage(rep, paths, claims)
	if len(checks) != 4 {
		t.Fatalf("%+v", checks)
	}
	if r := checks[0].Read; r == nil || !strings.Contains(r.String(), "nothing read: no weight file") {
		t.Errorf("empty model: %+v", r)
	}
	if r := checks[1].Read; r == nil || r.Cut != "model-00001-of-00004.safetensors" || r.Files != 0 || !strings.Contains(r.String(), "raise --probe-timeout") {
		t.Errorf("cut read: %+v", r)
	}
	for _, c := range checks[2:] {
		if c.Status == Fail { // (this machine's free space may WARN)
			t.Errorf("the dataset and output checks must run before the reads: %+v", c)
		}
	}
}
