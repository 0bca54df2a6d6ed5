package vllm

import (
	"strings"
	"testing"
)

// WrongAnswers are plausible wrong answers to the course's questions, each of which the old
// case-insensitive substring checks passed ("IP" in "multiple", "NIC" in "communication",
// "LID" in "valid"), or empty. Exported to the CLI test through vllmsim answers there.
var courseWrong = map[string][]string{
	"rocev2-udp-port":      {"RoCEv2 uses TCP port 4790.", "It uses multiple IP ports, typically 4790.", ""},
	"rocev2-encapsulation": {"RoCEv2 runs over multiple Ethernet segments at layer 2 only, so it is not routable.", "It is RDMA over TCP/IP offload engines."},
	"roce-lossless":        {"It needs jumbo frames and a fast switch.", "Just enable flow control on the NIC."},
	"nccl-ib-hca":          {"It sets the GID index NCCL uses for RoCE.", "NCCL_IB_HCA controls the timeout of IB verbs."},
	"nccl-debug-transport": {"Set NCCL_DEBUG=WARN and look for errors.", "Look for INFO lines with NET/Socket."},
	"gpudirect-rdma":       {"It enables communication between GPUs over NVLink.", "It copies GPU data through a bounce buffer in host memory to the network."},
	"ib-subnet-manager":    {"The port is in INIT because the cable is not valid; replace it.", "INIT means the link is training; wait a minute."},
	"roce-gid-index":       {"Use index 0 with NCCL_IB_HCA=mlx5_0.", "Any GID works."},
	"ring-allreduce-busbw": {"Each rank sends (N-1)/N of the data; busbw equals algbw.", "It sends 2N times the data."},
	"sanity-exact":         {"Lyon.", "The capital of France is Paris."},
}

// Correct answers in other words, with the typography models use: Unicode minus signs, en
// dashes, thousands separators, plurals, other casing, full-width characters.
var courseParaphrases = map[string][]string{
	"rocev2-udp-port":      {"RoCE v2 packets go to UDP destination port 4,791.", "Port ４７９１ (UDP)."},
	"rocev2-encapsulation": {"It wraps the InfiniBand transport in User Datagram Protocol over IPv4 or IPv6, so routers forward it like any L3 traffic."},
	"roce-lossless":        {"A lossless fabric: priority-based flow control on the switches plus ECN marking for congestion control (DCQCN)."},
	"nccl-ib-hca":          {"It specifies which InfiniBand devices (for example mlx5_0 and mlx5_1) NCCL may use.", "Restricts NCCL to the listed HCAs."},
	"nccl-debug-transport": {"With NCCL_DEBUG=INFO the log says NET/IB when InfiniBand is used and NET/Socket when it falls back to sockets."},
	"gpudirect-rdma":       {"It lets network adapters DMA straight into GPU memory, skipping the CPU.", "The NICs read and write GPU memory directly."},
	"ib-subnet-manager":    {"Until a subnet manager such as OpenSM assigns it a LID and programs the routing, the port stays in INIT."},
	"roce-gid-index":       {"Set NCCL_IB_GID_INDEX to the RoCEv2 GID, usually 3."},
	"ring-allreduce-busbw": {"Each rank sends 2(N−1)/N times the buffer; busbw = algbw × 2(N−1)/N.", "2 (n – 1) / n of the data per rank, and bus bandwidth is algbw times 2(n-1)/n."},
	"sanity-exact":         {" paris ", "PARIS."},
}

// TestCourseQAWrongAnswersFailParaphrasesPass is the point of the answer checks: every
// plausible wrong answer fails its case, every correct paraphrase passes it.
func TestCourseQAWrongAnswersFailParaphrasesPass(t *testing.T) {
	s, err := LoadQA(courseQA(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		wrong, right := courseWrong[c.Name], courseParaphrases[c.Name]
		if len(wrong) == 0 || len(right) == 0 {
			t.Errorf("case %s has no wrong answers or paraphrases in this test", c.Name)
		}
		for _, a := range wrong {
			if f := failures(c.Check(a)); len(f) == 0 {
				t.Errorf("%s: wrong answer %q PASSES", c.Name, a)
			}
		}
		for _, a := range right {
			if f := failures(c.Check(a)); len(f) > 0 {
				t.Errorf("%s: correct paraphrase %q FAILS: %s", c.Name, a, strings.Join(f, "; "))
			}
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
	for _, a := range append(courseWrong["ring-allreduce-busbw"], courseParaphrases["ring-allreduce-busbw"]...) {
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
