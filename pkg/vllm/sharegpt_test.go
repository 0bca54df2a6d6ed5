package vllm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadShareGPT reads the layout of ShareGPT_V3_unfiltered_cleaned_split.json (the file vLLM's
// ShareGPTDataset and `vllm bench serve --dataset-name sharegpt` take: an array of {"id",
// "conversations": [{"from", "value"}, ...]}); the content below is written for this test.
func TestLoadShareGPT(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[
 {"id": "a1", "conversations": [{"from": "human", "value": "What is RDMA?"}, {"from": "gpt", "value": "Remote direct memory access: one host reads another's memory without its CPU."}]},
 {"id": "a2", "conversations": [{"from": "human", "value": "hi"}]},
 {"id": "a3", "conversations": [{"from": "human", "value": "  "}, {"from": "gpt", "value": "?"}]},
 {"id": "a4", "conversations": [{"from": "human", "value": "Name a collective."}, {"from": "gpt", "value": "all_reduce"}, {"from": "human", "value": "another"}]}
]`)
	reqs, err := LoadShareGPT(good, 0)
	if err != nil {
		t.Fatal(err)
	}
	// One-turn and blank-prompt conversations are skipped; the reply's length sets the output
	// length at 4 characters a token, rounded up.
	if len(reqs) != 2 || reqs[0].Prompt != "What is RDMA?" || reqs[0].OutputLen != 20 || reqs[1].OutputLen != 3 {
		t.Fatalf("%+v", reqs)
	}
	if reqs, _ = LoadShareGPT(good, 64); reqs[0].OutputLen != 64 || reqs[1].OutputLen != 64 {
		t.Fatalf("--output-len does not override: %+v", reqs)
	}
	for _, c := range []struct{ name, body, want string }{
		{"object.json", `{"conversations": []}`, "line 1: the top level is a JSON object"},
		{"string.json", "[\n {\"conversations\": \"x\"}\n]", "line 2: conversations is a JSON string"},
		{"syntax.json", "[\n {\"conversations\": [}\n]", "line 2: invalid character"},
		{"empty.json", `[]`, "no conversation with a prompt and a reply"},
	} {
		_, err := LoadShareGPT(write(c.name, c.body), 0)
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "struct") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := LoadShareGPT(filepath.Join(dir, "missing.json"), 0); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
