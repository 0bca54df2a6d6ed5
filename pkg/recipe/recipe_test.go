package recipe

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/strict"
)

func TestBuiltinsValid(t *testing.T) {
	names := BuiltinNames()
	if len(names) < 3 {
		t.Fatalf("built-ins: %v", names)
	}
	for _, n := range names {
		if _, err := Load(n, nil); err != nil {
			t.Errorf("built-in %s is invalid: %v", n, err)
		}
	}
}

func TestSetTypedAndRelative(t *testing.T) {
	r, err := Load("allreduce", []string{"nodes=5", "gpusPerNode=8", "spec.nccl.env.NCCL_ALGO=Ring,Tree", "metadata.name=sweep-1", "ncclTests.maxBytes=1G"})
	if err != nil {
		t.Fatal(err)
	}
	if r.MPI.Nodes != 5 || r.MPI.GPUsPerNode != 8 || r.MPI.NCCL.Env["NCCL_ALGO"] != "Ring,Tree" || r.Metadata.Name != "sweep-1" || r.MPI.NCCLTests.MaxBytes != "1G" {
		t.Errorf("overrides not applied: %+v", r.MPI)
	}
	r, err = Load("qlora", []string{"volumes[1]={name: data, claimName: nfs-data, mountPath: /data}", "command=[python, x.py]"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Training.Volumes) != 2 || r.Training.Volumes[1].MountPath != "/data" || r.Training.Command[1] != "x.py" {
		t.Errorf("list overrides: %+v %v", r.Training.Volumes, r.Training.Command)
	}
	_, err = Load("qlora", []string{"volumes[5].name=x"})
	var ps strict.Problems
	if !errors.As(err, &ps) || !strings.Contains(ps[0].Msg, "past the end") {
		t.Errorf("index past the end: %v", err)
	}
}

func TestDefaultsRecorded(t *testing.T) {
	r, err := Load("qlora", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Training.ShmSize != "32Gi" {
		t.Errorf("shm default from 64Gi memory: %s", r.Training.ShmSize)
	}
	found := false
	for _, d := range r.Defaulted {
		if d.Path == "spec.shmSize" {
			found = true
		}
	}
	if !found {
		t.Errorf("defaulted fields not recorded: %v", r.Defaulted)
	}
	// Defaulting twice changes nothing.
	before, _ := r.Effective()
	r.Default()
	after, _ := r.Effective()
	if string(before) != string(after) {
		t.Error("Default is not idempotent")
	}
}

func TestWarningsForUnknownNCCL(t *testing.T) {
	r, err := Load("qlora", []string{"nccl.env.NCCL_IB_QPS_PER_CONECTION=4", "nccl.env.NCCL_IB_HCA=mlx5_1"})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Warnings().Error()
	if !strings.Contains(w, "did you mean NCCL_IB_QPS_PER_CONNECTION") || !strings.Contains(w, "prefix") {
		t.Errorf("warnings: %s", w)
	}
}

func TestEveryProblemReported(t *testing.T) {
	data := []byte("apiVersion: ain.dev/v1alpha1\nkind: MPIJob\nmetadata:\n  name: x\nspec:\n  image: ''\n  nodes: 0\n  slots: 3\n  command: [a]\n  nccl: {env: {NCCL_PROTO: LL129}}\n")
	_, err := Parse("x.yaml", data, nil)
	var ps strict.Problems
	if !errors.As(err, &ps) || len(ps) != 4 {
		t.Fatalf("want 4 problems (image, nodes, slots, NCCL_PROTO), got %v", err)
	}
	if ps[0].Line != 6 || ps[len(ps)-1].Line != 10 {
		t.Errorf("lines: %v", ps)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"8": 8, "1K": 1024, "128M": 128 << 20, "8G": 8 << 30, "8g": 8 << 30} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "G", "-1", "1T", "1.5G"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParse: no input, with or without --set, may panic; a result is either a recipe that
// validates or problems that name a source.
func FuzzParse(f *testing.F) {
	for _, n := range BuiltinNames() {
		data, _ := Builtin(n)
		f.Add(data, "nodes=2")
	}
	files, _ := filepath.Glob("../../testdata/invalid/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data, "nccl.env.NCCL_ALGO=Tree")
	}
	f.Add([]byte("a: [b, {c: &x d}, *x]"), "volumes[0].name=x")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		r, err := Parse("fuzz.yaml", data, []string{set})
		if err != nil {
			var ps strict.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					if p.Source == "" {
						t.Fatalf("problem without a source: %+v", p)
					}
				}
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse returned a recipe that does not validate: %v", err)
		}
	})
}

// A value a --set flag replaced is reported at the flag, not at the line of the file that held
// the key before (`ain render qlora --set nodes=0` once blamed builtin:qlora:21).
func TestSetProblemNamesTheFlag(t *testing.T) {
	for _, set := range []string{"nodes=0", "spec.nodes=0"} {
		_, err := Load("qlora", []string{set})
		var ps strict.Problems
		if !errors.As(err, &ps) || len(ps) != 1 {
			t.Fatalf("--set %s: %v", set, err)
		}
		if ps[0].Source != "--set "+set || ps[0].Line != 0 || ps[0].Path != "spec.nodes" {
			t.Errorf("--set %s reported as %+v", set, ps[0])
		}
	}
	// A problem in a value the file still holds keeps its file line.
	_, err := Load("qlora", []string{"gpusPerNode=1", "spec.nodes=0", "nodes=2"})
	if err != nil {
		t.Errorf("a later --set of the same key wins: %v", err)
	}
}

func TestParseBytesUnitSuffixes(t *testing.T) {
	for in, want := range map[string]int64{"8B": 8, "2KB": 2048, "1GiB": 1 << 30, "64MiB": 64 << 20, " 4k ": 4096} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"B", "iB", "1TB", "1Ki", "KiB", "1 GiB x"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The served-model-name warning says who applies OpenAI's reasoning-model rules: go-openai's
// validator (case-sensitive prefixes o1, o3, o4, gpt-5 and four GPT-6 IDs in v1.43.0), not
// ain's own requests, which bypass it.
func TestServedModelNameLikeOpenAIReasoning(t *testing.T) {
	for name, warned := range map[string]bool{"o3-mini": true, "gpt-5-nano": true, "gpt-6-sol": true, "O3-mini": false, "qwen": false} {
		r, err := Load("vllm", []string{"spec.servedModelName=" + name})
		if err != nil {
			t.Fatal(err)
		}
		w := ""
		if ws := r.Warnings(); len(ws) > 0 {
			w = ws.Error()
		}
		got := strings.Contains(w, "spec.servedModelName")
		if got != warned || got && (!strings.Contains(w, "go-openai") || !strings.Contains(w, "ain's own requests are not affected")) {
			t.Errorf("%s: warned %v, want %v: %s", name, got, warned, w)
		}
	}
}
