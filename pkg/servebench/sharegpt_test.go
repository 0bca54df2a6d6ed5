package servebench

import (
	"fmt"
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
	reqs, skipped, err := LoadShareGPT(good, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	// One-turn and blank-prompt conversations are skipped; the reply's length sets the output
	// length at 4 characters a token, rounded up; vLLM's filter leaves out a reply under 4 tokens
	// ("all_reduce") unless --output-len is given.
	if len(reqs) != 1 || skipped != 1 || reqs[0].Prompt != "What is RDMA?" || reqs[0].OutputLen != 20 {
		t.Fatalf("%+v, skipped %d", reqs, skipped)
	}
	if reqs, skipped, _ = LoadShareGPT(good, 64, 1); len(reqs) != 2 || skipped != 0 || reqs[0].OutputLen != 64 || reqs[1].OutputLen != 64 {
		t.Fatalf("--output-len does not override: %+v", reqs)
	}
	// The order is shuffled by the seed, the same for the same seed (vLLM shuffles too).
	var many strings.Builder
	many.WriteString("[")
	for i := range 50 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"conversations": [{"from": "human", "value": "question number %02d?"}, {"from": "gpt", "value": "an answer of some length"}]}`, i)
	}
	many.WriteString("]")
	mf := write("many.json", many.String())
	a, _, _ := LoadShareGPT(mf, 0, 7)
	b, _, _ := LoadShareGPT(mf, 0, 7)
	c, _, _ := LoadShareGPT(mf, 0, 8)
	if len(a) != 50 || a[0].Prompt != b[0].Prompt || a[49].Prompt != b[49].Prompt || (a[0].Prompt == c[0].Prompt && a[1].Prompt == c[1].Prompt) || a[0].Prompt == "question number 00?" && a[1].Prompt == "question number 01?" {
		t.Errorf("seeded shuffle: %q %q / %q", a[0].Prompt, a[1].Prompt, c[0].Prompt)
	}
	// Over vLLM's length limits: a prompt over 1024 tokens, or 2048 with the reply.
	long := write("long.json", `[{"conversations": [{"from": "human", "value": "`+strings.Repeat("x", 4*1025)+`"}, {"from": "gpt", "value": "fine answer"}]},
 {"conversations": [{"from": "human", "value": "a fair question here"}, {"from": "gpt", "value": "`+strings.Repeat("y", 4*2050)+`"}]}]`)
	if _, skipped, err := LoadShareGPT(long, 0, 1); err == nil || skipped != 2 || !strings.Contains(err.Error(), "length filter") {
		t.Errorf("too long: skipped %d, %v", skipped, err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"object.json", `{"conversations": []}`, "line 1: the top level is a JSON object"},
		{"string.json", "[\n {\"conversations\": \"x\"}\n]", "line 2: conversations is a JSON string"},
		{"syntax.json", "[\n {\"conversations\": [}\n]", "line 2: invalid character"},
		{"empty.json", `[]`, "no conversation with a prompt and a reply"},
	} {
		_, _, err := LoadShareGPT(write(c.name, c.body), 0, 1)
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "struct") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, _, err := LoadShareGPT(filepath.Join(dir, "missing.json"), 0, 1); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
