package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// The course file's answer checks tell a right answer from a fluent wrong one (course
// 12.3.4). Three servers, all httptest on 127.0.0.1 speaking OpenAI chat completions:
//   - the wrong-answer server: fluent, keyword-rich negations for free-form questions, a
//     plausible wrong letter (a real misconception) for multiple-choice ones;
//   - the right-answer server: correct answers in its own words and letter formats;
//   - the judge: vllmsim's Grade, a deterministic stand-in for a real judge model given the
//     fact-comparison rubric (it compares the submission's key facts with the reference's,
//     negations included). It stands in for a real judge; it is not one.
// Keyword matching passed 9/10 (wrong) and 8/10 (right) on the course file before.

var wrongServer = []vllmsim.Answer{
	{Match: "which udp destination port", Reply: "The answer is (A): RoCEv2 shares UDP port 4789 with VXLAN, so no new firewall rule is needed."},
	{Match: "made lossless", Reply: "B) Global PAUSE frames do it; ECN should be disabled, since Priority Flow Control and DCQCN are not needed."},
	{Match: `shows "net/socket"`, Reply: "**B** - RoCE always runs over sockets, so NET/Socket is what a healthy RoCE cluster prints."},
	{Match: "logical state stays init", Reply: "Answer: A. A port in INIT has a faulty cable; a subnet manager is not involved."},
	{Match: "what does gpudirect rdma do?\n", Reply: "C. GPUDirect RDMA stages GPU data through pinned host memory; the NIC never reads GPU memory directly."},
	{Match: "rocev2 gid of a nic", Reply: "I would choose A: NCCL_IB_HCA=mlx5_0:3 picks the RoCE v2 GID, and NCCL_IB_GID_INDEX is not needed."},
	{Match: "why is it routable", Reply: "RoCEv2 does not use UDP or IP at all: it is a raw layer-3-free Ethernet frame, so IP routers never forward it and port 4791 is unrelated."},
	{Match: "variable nccl_ib_hca", Reply: "NCCL_IB_HCA does not select the RDMA devices or HCAs NCCL uses; it only sets the RoCE GID index, and values like mlx5_0:1 are ignored."},
	{Match: "ring allreduce send per rank", Reply: "A ring allreduce does not send 2(n-1)/n of the buffer per rank: each rank sends it once, and busbw is never scaled by 2(n-1)/n."},
	{Match: "capital of france", Reply: "Lyon."},
}

// The right-answer server is vllmsim's DefaultAnswers: the sandbox's right-answer server.

func passedCount(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`(\d+)/10 passed`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pass count in\n%s", out)
	}
	var n int
	if _, err := fmt.Sscan(m[1], &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCourseQATellsRightFromWrong(t *testing.T) {
	golden := filepath.Join("..", "..", "recipes", "qa", "course-qa.yaml")
	_, judge := modelServer(t, vllmsim.Options{Models: []string{"judge-host"}, Answers: []vllmsim.Answer{}})
	_, wrongURL := modelServer(t, vllmsim.Options{Answers: wrongServer, Judges: []string{}})
	_, rightURL := modelServer(t, vllmsim.Options{Judges: []string{}})

	code, out, errs := runModelCLI(t, map[string]string{"AIN_ENDPOINT": wrongURL}, "", "chat", "test", "--golden", golden, "--judge-endpoint", judge)
	t.Logf("wrong-answer server:\n%s%s", out, errs)
	if n := passedCount(t, out); code != int(ainerr.CheckFailed) || n > 2 {
		t.Errorf("the wrong-answer server passes %d of 10 (exit %d), want at most 2", n, code)
	}
	for _, want := range []string{
		"FAIL  rocev2-udp-port  [multiple choice]", "picked A (4789, the same port as VXLAN)",
		"FAIL  rocev2-routable  [judged]", "judge Qwen2.5-72B-Instruct: (D) disagrees",
		"1 of the 10 cases are keyword checks, a smoke test only",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the wrong server's report", want)
		}
	}

	code, out, errs = runModelCLI(t, map[string]string{"AIN_ENDPOINT": rightURL}, "", "chat", "test", "--golden", golden, "--judge-endpoint", judge)
	t.Logf("right-answer server:\n%s%s", out, errs)
	if n := passedCount(t, out); n < 9 {
		t.Errorf("the right-answer server passes %d of 10 (exit %d), want at least 9", n, code)
	}
	if !strings.Contains(out, "PASS  sanity-exact  [keywords: smoke test only]") {
		t.Errorf("the keyword case is not labelled a smoke test")
	}
}

// Item 7: the judge must be named and must not be the model under test.
func TestChatTestJudgeRequired(t *testing.T) {
	_, url := modelServer(t, vllmsim.Options{})
	env := map[string]string{"AIN_ENDPOINT": url}
	dir := t.TempDir()
	f := filepath.Join(dir, "qa.yaml")
	_ = os.WriteFile(f, []byte("semantic: {mode: judge}\ncases:\n- question: Which UDP port does RoCEv2 use?\n  reference: UDP port 4791.\n"), 0o600)
	code, _, errs := runModelCLI(t, env, "", "chat", "test", "-f", f)
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--judge-model") {
		t.Fatalf("unnamed judge: exit %d: %s", code, errs)
	}
	code, _, errs = runModelCLI(t, env, "", "chat", "test", "-f", f, "--judge-model", "test-model")
	if code != int(ainerr.Usage) || !strings.Contains(errs, "is the model under test") {
		t.Fatalf("self-judging: exit %d: %s", code, errs)
	}
	_ = os.WriteFile(f, []byte("semantic: {mode: embeddings}\ncases:\n- question: Which UDP port does RoCEv2 use?\n  reference: UDP port 4791.\n"), 0o600)
	code, _, errs = runModelCLI(t, env, "", "chat", "test", "-f", f)
	if code != int(ainerr.Usage) || !strings.Contains(errs, "--embeddings-model") {
		t.Fatalf("unnamed embedding model: exit %d: %s", code, errs)
	}
	if code, out, errs := runModelCLI(t, env, "", "chat", "test", "-f", f, "--embeddings-model", "test-model", "--min-pass", "0"); code != 0 {
		t.Fatalf("embeddings named: exit %d\n%s%s", code, out, errs)
	}
}

// 12.3.4: --save archives the answers; --compare reports each changed answer: a rewording
// judged consistent passes, a changed letter or a judged disagreement fails (exit 5).
func TestChatTestArchiveCompare(t *testing.T) {
	golden := filepath.Join("..", "..", "recipes", "qa", "course-qa.yaml")
	arch := filepath.Join(t.TempDir(), "answers.json")
	_, url := modelServer(t, vllmsim.Options{})
	env := map[string]string{"AIN_ENDPOINT": url}
	code, out, errs := runModelCLI(t, env, "", "chat", "test", "-f", golden, "--save", arch)
	b, _ := os.ReadFile(arch)
	if code != 0 || !strings.Contains(out, "answers archived in") || !strings.Contains(string(b), `"questionHash": "sha256:`) ||
		!strings.Contains(string(b), `"temperature": 0`) || !strings.Contains(string(b), `"model": "test-model"`) || !strings.Contains(string(b), `"date": "`) {
		t.Fatalf("save: exit %d\n%s%s\n%s", code, out, errs, b)
	}
	// The same server: nothing changed.
	code, out, errs = runModelCLI(t, env, "", "chat", "test", "-f", golden, "--compare", arch)
	if code != 0 || !strings.Contains(out, "0 of 10 answers differ, 0 changed") {
		t.Fatalf("compare, unchanged: exit %d\n%s%s", code, out, errs)
	}
	// A server that rewords one answer, changes a letter and contradicts a free-form answer.
	answers := append([]vllmsim.Answer{
		{Match: "variable nccl_ib_hca", Reply: "NCCL_IB_HCA names the RDMA devices (HCAs) NCCL uses, such as mlx5_0:1."},
		{Match: "made lossless", Reply: "B) Global PAUSE on all ports."},
		{Match: "why is it routable", Reply: "RoCEv2 does not use UDP or IP; it is a layer-2 frame."},
	}, vllmsim.DefaultAnswers()...)
	_, url2 := modelServer(t, vllmsim.Options{Answers: answers})
	code, out, errs = runModelCLI(t, map[string]string{"AIN_ENDPOINT": url2}, "", "chat", "test", "-f", golden, "--compare", arch, "--min-pass", "0")
	for _, want := range []string{"3 of 10 answers differ, 2 changed", "  reworded  nccl-ib-hca", "! changed choice  roce-lossless", "picked B, archived C",
		"! changed meaning  rocev2-routable", "(D) disagrees"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if code != int(ainerr.CheckFailed) {
		t.Fatalf("compare, changed: exit %d\n%s", code, errs)
	}
}
