package nccl

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

// TestOldNCCLLogs covers the NCCL 2.3-2.5 line formats and libibverbs failures on logs cut from
// public issues (sources in testdata/logs/old/README.md). Each case names the evidence that
// separates it from its neighbour verdict.
func TestOldNCCLLogs(t *testing.T) {
	tests := []struct {
		file      string
		transport string
		problems  []string
		// perRank transports in order; "" to skip the check
		perRank []string
	}{
		// 2.3: "Net/IB: call to devices() returned 0 devices" is the old "No device found", and
		// "NET/IB : Using interface X for sideband communication" is not an IB device.
		{"nccl-2.3.7-socket-horovod685.log", TransportSocket, []string{CodeNoIBDevice, CodeSocketFallback}, []string{"socket", "socket"}},
		// 2.3: "Using internal Network Socket" is the old "Using network Socket".
		{"nccl-2.3-internal-socket-written.log", TransportSocket, []string{CodeSocketFallback}, []string{"socket", "socket"}},
		// libibverbs missing (WARN in 2.4, INFO in 2.18): socket, and the cause named before it.
		{"nccl-2.4-libibverbs-missing-nccl367.log", TransportSocket, []string{CodeVerbsMissing, CodeSocketFallback}, nil},
		{"nccl-2.18-libibverbs-info-nccltests166.log", TransportSocket, []string{CodeVerbsMissing, CodeSocketFallback}, nil},
		// 2.4.7: every rank prints "NET/Socket : Using [0]ib0" (bootstrap); one printed NET/IB: IB,
		// and the ranks whose IB line is not in the cut are unknown, not a socket fallback.
		{"nccl-2.4.7-ib-with-bootstrap-socket-nvpeermem56.log", TransportIB, []string{},
			[]string{"ib", "unknown", "unknown", "unknown", "unknown", "unknown", "unknown", "unknown"}},
		// 2.4.7 on AWS without EFA: "NET/IB : No device found" makes the socket line a real fallback.
		{"nccl-2.4.7-no-ib-device-nccl226.log", TransportSocket, []string{CodeNoIBDevice, CodeSocketFallback}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := analyzeFile(t, filepath.Join("testdata", "logs", "old", tc.file))
			if r.Transport != tc.transport {
				t.Errorf("transport %s, want %s", r.Transport, tc.transport)
			}
			if got := codes(r.Problems); !slices.Equal(got, tc.problems) {
				t.Errorf("problems %v, want %v", got, tc.problems)
			}
			if slices.Contains(codes(r.Problems), CodeMixedTransport) {
				t.Errorf("mixed-transport on a run whose ranks agree")
			}
			if tc.perRank != nil {
				var got []string
				for _, p := range r.PerRank {
					got = append(got, p.Transport)
				}
				if !slices.Equal(got, tc.perRank) {
					t.Errorf("perRank %v, want %v", got, tc.perRank)
				}
			}
			golden.JSON(t, "old-"+strings.TrimSuffix(tc.file, ".log"), r)
		})
	}
}

// TestNoNCCLLines: an input without any NCCL line is a problem (exit 5 in the CLI), not an OK
// "transport unknown"; the message says whether it was empty, binary or just other text.
func TestNoNCCLLines(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "is empty"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00garbage\x00\x01\nmore\x00\n", "binary data"},
		{"other text", "Epoch 1/10 loss=2.31\nEpoch 2/10 loss=1.98\n", "holds no NCCL line (2 line(s) read)"},
		{"nccl-tests without NCCL_DEBUG", "# nThread 1 nGpus 1 minBytes 8\n#  Rank  0 Group  0 Pid 1 on h device 0 [0x01] H100\n", "holds no NCCL line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := AnalyzeLog(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || len(r.Problems) != 1 || r.Problems[0].Code != CodeNoNCCLLines {
				t.Fatalf("problems %+v, want one %s", r.Problems, CodeNoNCCLLines)
			}
			if !strings.Contains(r.Problems[0].Message, tc.want) {
				t.Errorf("message %q lacks %q", r.Problems[0].Message, tc.want)
			}
			if r.Problems[0].Fix == "" || !strings.Contains(r.Verdict(), "not an NCCL log") {
				t.Errorf("fix %q verdict %q", r.Problems[0].Fix, r.Verdict())
			}
			for _, w := range r.Warnings {
				if w.Code == CodeNoEvidence {
					t.Errorf("no-transport-evidence repeated as a warning")
				}
			}
		})
	}
	// One NCCL line is enough to not be this problem.
	r, _ := AnalyzeLog(strings.NewReader("NCCL version 2.21.5+cuda12.4\n"))
	if slices.Contains(codes(r.Problems), CodeNoNCCLLines) {
		t.Errorf("a version line is an NCCL line")
	}
}
