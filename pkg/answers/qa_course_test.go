package answers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/vllm/vllmsim"
)

// courseWrong are wrong answers to the course's questions: a plausible wrong letter written
// the ways models write one, and fluent, keyword-rich negations for the judged cases.
var courseWrong = map[string][]string{
	"rocev2-udp-port":      {"The answer is (A).", "C) 4790", "**D**: it is TCP port 4791, not UDP 4791.", "It is 4791. Answer: D"},
	"roce-lossless":        {"A. Jumbo frames.", "Answer: B", "(D) The NIC retransmits, like TCP."},
	"nccl-net-socket":      {"B) RoCE runs over sockets.", "**C**"},
	"ib-port-init":         {"A - a faulty cable.", "The correct option is C."},
	"gpudirect-rdma":       {"C. It stages data through pinned host memory.", "The answer is A"},
	"roce-gid-index":       {"A) NCCL_IB_HCA=mlx5_0:3", "I'd pick B.", "Set NCCL_IB_GID_INDEX... no wait, the answer is C."},
	"rocev2-routable":      {"RoCEv2 does not use UDP or IP; it is a layer-2 Ethernet frame.", "It is RoCE over TCP; IP routers do not forward it."},
	"nccl-ib-hca":          {"NCCL_IB_HCA does not select which HCAs or RDMA devices NCCL uses; it sets a timeout."},
	"ring-allreduce-busbw": {"Each rank does not send 2(n-1)/n; it sends the whole buffer, and busbw equals algbw.", "It sends 2N times the data."},
	"sanity-exact":         {"Lyon.", "The capital of France is Paris."},
}

// courseRight are correct answers in other words and letter formats.
var courseRight = map[string][]string{
	"rocev2-udp-port":      {"The answer is (B).", "B) 4791", "**B**", "Answer: B — UDP 4791.", "b) port 4791 is wrong for VXLAN but right here: B"},
	"roce-lossless":        {"C", "(C) PFC plus ECN for DCQCN.", "I choose C."},
	"nccl-net-socket":      {"A. It fell back to sockets.", "The correct answer is A"},
	"ib-port-init":         {"D) No subnet manager.", "**D** - run OpenSM."},
	"gpudirect-rdma":       {"B", "The answer is **B**: the NIC DMAs into GPU memory."},
	"roce-gid-index":       {"D. Set NCCL_IB_GID_INDEX to the RoCE v2 GID.", "Answer: (D)"},
	"rocev2-routable":      {"The InfiniBand transport rides in UDP datagrams (port 4791) over IP, so layer-3 routers forward it."},
	"nccl-ib-hca":          {"It lists the RDMA adapters NCCL may use, e.g. mlx5_0:1."},
	"ring-allreduce-busbw": {"Each rank moves 2(N−1)/N of the buffer; busbw = algbw × 2(N−1)/N."},
	"sanity-exact":         {" paris ", "PARIS."},
}

// TestCourseQAWrongAnswersFailParaphrasesPass is the point of the answer checks: every
// wrong answer fails its case, every right one passes it. Judged cases are graded by
// vllmsim.Grade, the deterministic stand-in for a judge model (not a judge itself).
func TestCourseQAWrongAnswersFailParaphrasesPass(t *testing.T) {
	s, err := LoadQA(courseQA(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 10 {
		t.Fatalf("%d cases, want 10", len(s.Cases))
	}
	methods := map[string]int{}
	for i := range s.Cases {
		c := &s.Cases[i]
		methods[c.Method(s)]++
		pass := func(a string) (bool, string) {
			if f := failures(c.Check(a)); len(f) > 0 {
				return false, strings.Join(f, "; ")
			}
			if c.Reference != "" {
				g := vllmsim.Grade(fmt.Sprintf(FactualityRubric, c.Question, c.Reference, a))
				l, _ := ExtractChoice(g, factualityClasses)
				return (Verdict{Class: l}).Pass(), g
			}
			return true, ""
		}
		wrong, right := courseWrong[c.Name], courseRight[c.Name]
		if len(wrong) == 0 || len(right) == 0 {
			t.Errorf("case %s has no wrong or right answers in this test", c.Name)
		}
		for _, a := range wrong {
			if ok, _ := pass(a); ok {
				t.Errorf("%s: wrong answer %q PASSES", c.Name, a)
			}
		}
		for _, a := range right {
			if ok, why := pass(a); !ok {
				t.Errorf("%s: right answer %q FAILS: %s", c.Name, a, why)
			}
		}
	}
	if methods["choice"] < 5 || methods["judge"] < 3 || methods["keywords"] > 1 {
		t.Errorf("methods %v: the course file is to be multiple choice and judged, keywords a smoke test at most", methods)
	}
}

func TestExtractChoice(t *testing.T) {
	opts := []string{"4789", "4791", "4790", "TCP"}
	for in, want := range map[string]string{
		"The answer is (B)": "B", "B)": "B", "**B**": "B", "Answer: **C**": "C", "(D) TCP.": "D", "A. 4789": "A",
		"A subnet manager assigns LIDs.": "", "Option A is wrong; the correct option is C.": "C", "It is (A) or (B).": "",
		"It uses 4791.": "B", "The answer is E.": "", "answer is a port": "", "B": "B",
	} {
		if got, _ := ExtractChoice(in, opts); got != want {
			t.Errorf("ExtractChoice(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTokenBoundaryMatching(t *testing.T) {
	for _, tc := range []struct {
		text, phrase string
		want         bool
	}{
		{"multiple paths", "IP", false},
		{"over UDP/IP", "IP", true},
		{"communication", "NIC", false},
		{"two NICs", "NIC", true},
		{"valid", "LID", false},
		{"2(N−1)/N", "2(n-1)/n", true},
		{"2 (n ‒ 1) / n", "2(n-1)/n", true},
		{"(n-1)/n", "2(n-1)/n", false},
		{"port 47910", "4791", false},
		{"NCCL_IB_GID_INDEX=3", "NCCL_IB_GID_INDEX", true},
		{"NCCL_IB_GID_INDEXES", "NCCL_IB_GID_INDEX", false}, // '_' words take no plural
		{"ＮＥＴ／ＩＢ", "NET/IB", true},
	} {
		n := normalize(tc.text, false)
		s, _ := findPhrase(tokenize(n), tokenize(normalize(tc.phrase, false)))
		if (s >= 0) != tc.want {
			t.Errorf("%q in %q: %v, want %v", tc.phrase, tc.text, s >= 0, tc.want)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []float64
	}{
		{"port 4,791 and 12.5 GB/s", []float64{4791, 12.5}},
		{"mlx5_0 and RoCEv2 at 3e2", []float64{300}},
		{"2(n-1)/n", []float64{2, 1}},
		{"a drop of -3 dB", []float64{-3}},
		{"1,2,3", []float64{1, 2, 3}},
	} {
		var got []float64
		for _, n := range numbers(normalize(tc.text, false)) {
			got = append(got, n.value)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
			}
		}
	}
	if !within(4790.5, 4791, 1, 0) || within(4789, 4791, 1, 0) || !within(95, 100, 0, 0.05) || within(94, 100, 0, 0.05) || !within(3, 3, 0, 0) {
		t.Error("tolerances")
	}
}

func FuzzAnswerCheck(f *testing.F) {
	for _, a := range append(courseWrong["ring-allreduce-busbw"], courseRight["ring-allreduce-busbw"]...) {
		f.Add(a, "2(n-1)/n")
	}
	f.Add("ＮＥＴ／ＩＢ 4,791 -3e-2", "net/ib")
	f.Fuzz(func(t *testing.T, answer, phrase string) {
		n := normalize(answer, false)
		toks := tokenize(n)
		for _, tk := range toks {
			if tk.start < 0 || tk.end > len(n) || tk.start >= tk.end || n[tk.start:tk.end] != tk.text {
				t.Fatalf("token %+v out of %q", tk, n)
			}
		}
		if s, e := findPhrase(toks, tokenize(normalize(phrase, false))); s >= 0 {
			_ = evidence(n, s, e)
			// A phrase found in the answer is found in the answer plus more text.
			if s2, _ := findPhrase(tokenize(normalize(answer+" x", false)), tokenize(normalize(phrase, false))); s2 < 0 {
				t.Fatalf("%q found in %q but not with a suffix", phrase, answer)
			}
		}
		for _, nb := range numbers(n) {
			if nb.start < 0 || nb.end > len(n) || nb.start > nb.end {
				t.Fatalf("number %+v out of %q", nb, n)
			}
		}
	})
}
