package nccl

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
)

func codes(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func analyzeFile(t *testing.T, path string) *LogReport {
	t.Helper()
	return golden.Parse(t, path, AnalyzeLog)
}

// TestLogVerdicts covers every transport and finding on samples written from the documented
// line formats (NCCL 2.4 to 2.30; see ../../../shared/notes/nccl-ib-k8s.md).
func TestLogVerdicts(t *testing.T) {
	tests := []struct {
		file      string
		transport string
		gdr       string // true, false, null
		version   string
		ranks     int // 0: null
		devices   []string
		problems  []string
		warnings  []string
		perRank   int
		tuning    int
		env       []string
	}{
		{file: "ib-2.18-interleaved.log", transport: "ib", gdr: "true", version: "2.18.3", ranks: 2,
			devices: []string{"mlx5_0:1", "mlx5_1:1"}, perRank: 2, tuning: 4, env: []string{"NCCL_IB_HCA", "NCCL_ALGO"}},
		{file: "roce-2.21.log", transport: "roce", gdr: "true", version: "2.21.5", ranks: 2,
			devices: []string{"mlx5_2:1", "mlx5_3:1"}, perRank: 2, env: []string{"NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME"}},
		{file: "socket-no-device.log", transport: "socket", gdr: "false", version: "2.19.3", ranks: 16,
			problems: []string{CodeNoIBDevice, CodeSocketFallback}},
		{file: "hca-nomatch.log", transport: "socket", gdr: "false", version: "2.20.5",
			problems: []string{CodeIBHCANoMatch, CodeSocketFallback}, perRank: 2, env: []string{"NCCL_IB_HCA"}},
		{file: "plugin-ibext.log", transport: "plugin:IBext", gdr: "true", version: "2.17.1", ranks: 16,
			devices: []string{"mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1"}},
		{file: "plugin-aws-ofi.log", transport: "plugin:aws-ofi", gdr: "true", version: "2.18.5"},
		{file: "single-node-p2p.log", transport: "none", gdr: "null", version: "2.30.7", ranks: 8,
			warnings: []string{CodeSingleNode}},
		{file: "shm-error.log", transport: "none", gdr: "null", version: "2.19.3", ranks: 4,
			problems: []string{CodeShm}, warnings: []string{CodeSingleNode}},
		{file: "gdr-disabled.log", transport: "ib", gdr: "false", version: "2.12.12", ranks: 2,
			devices: []string{"mlx5_0:1"}, warnings: []string{CodeGDRDisabled}},
		{file: "mixed-ranks.log", transport: "socket", gdr: "false", version: "2.20.5", ranks: 2,
			devices: []string{"mlx5_0:1"}, problems: []string{CodeMixedTransport, CodeNoIBDevice, CodeSocketFallback}, perRank: 2},
		{file: "old-2.4-rings.log", transport: "ib", gdr: "true", version: "2.4.8", ranks: 4, devices: []string{"mlx5_0:1"}},
		{file: "no-evidence.log", transport: "unknown", gdr: "null", version: "2.26.2", problems: []string{CodeNoEvidence}},
		{file: "ib-completion-error.log", transport: "ib", gdr: "true", version: "2.23.4", problems: []string{CodeIBCompletion}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := analyzeFile(t, filepath.Join("testdata", "logs", tc.file))
			if r.Transport != tc.transport {
				t.Errorf("transport = %q, want %q", r.Transport, tc.transport)
			}
			gdr := "null"
			if r.GDR != nil {
				gdr = map[bool]string{true: "true", false: "false"}[*r.GDR]
			}
			if gdr != tc.gdr {
				t.Errorf("gdr = %s, want %s", gdr, tc.gdr)
			}
			if r.NCCLVersion == nil || *r.NCCLVersion != tc.version {
				t.Errorf("ncclVersion = %v, want %s", ptrStr(r.NCCLVersion), tc.version)
			}
			if (tc.ranks == 0) != (r.Ranks == nil) || (r.Ranks != nil && *r.Ranks != tc.ranks) {
				t.Errorf("ranks = %v, want %d (0 = null)", ptrStr(r.Ranks), tc.ranks)
			}
			if tc.devices == nil {
				tc.devices = []string{}
			}
			if !slices.Equal(r.Devices, tc.devices) {
				t.Errorf("devices = %v, want %v", r.Devices, tc.devices)
			}
			if tc.problems == nil {
				tc.problems = []string{}
			}
			if got := codes(r.Problems); !sameSet(got, tc.problems) {
				t.Errorf("problems = %v, want %v", got, tc.problems)
			}
			if tc.warnings == nil {
				tc.warnings = []string{}
			}
			if got := codes(r.Warnings); !sameSet(got, tc.warnings) {
				t.Errorf("warnings = %v, want %v", got, tc.warnings)
			}
			if tc.perRank > 0 && len(r.PerRank) != tc.perRank {
				t.Errorf("perRank has %d entries, want %d", len(r.PerRank), tc.perRank)
			}
			if len(r.Tuning) != tc.tuning {
				t.Errorf("tuning has %d entries, want %d: %+v", len(r.Tuning), tc.tuning, r.Tuning)
			}
			var env []string
			for _, e := range r.Env {
				env = append(env, e.Name)
			}
			if !sameSet(env, tc.env) {
				t.Errorf("env = %v, want %v", env, tc.env)
			}
			if len(r.Evidence) == 0 {
				t.Errorf("no evidence")
			}
			for _, e := range r.Evidence {
				if e.Line <= 0 || e.Text == "" {
					t.Errorf("bad evidence %+v", e)
				}
			}
			for _, f := range r.Problems {
				if f.Fix == "" {
					t.Errorf("problem %s has no fix", f.Code)
				}
			}
			golden.JSON(t, "log-"+strings.TrimSuffix(tc.file, ".log"), r)
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestLogPerRankFiles feeds one file per rank, as `ain doctor nccl-log rank0.log rank1.log` does.
func TestLogPerRankFiles(t *testing.T) {
	a := NewLogAnalyzer()
	rank0 := "h0:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\nh0:1:2 [0] NCCL INFO Using network IB\nh0:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init COMPLETE\n"
	rank1 := "h1:7:7 [0] NCCL INFO NET/IB : No device found.\nh1:7:8 [0] NCCL INFO Using network Socket\nh1:7:8 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init COMPLETE\n"
	if err := a.Feed("rank0.log", strings.NewReader(rank0)); err != nil {
		t.Fatal(err)
	}
	if err := a.Feed("rank1.log", strings.NewReader(rank1)); err != nil {
		t.Fatal(err)
	}
	r := a.Report()
	if r.Transport != TransportSocket || !slices.Contains(codes(r.Problems), CodeMixedTransport) {
		t.Fatalf("transport %s problems %v", r.Transport, codes(r.Problems))
	}
	if len(r.PerRank) != 2 || *r.PerRank[0].Rank != 0 || r.PerRank[0].File != "rank0.log" || r.PerRank[1].Transport != TransportSocket {
		t.Fatalf("perRank = %+v", r.PerRank)
	}
	var noDev *Finding
	for i := range r.Problems {
		if r.Problems[i].Code == CodeNoIBDevice {
			noDev = &r.Problems[i]
		}
	}
	if noDev == nil || len(noDev.Lines) != 1 || noDev.Lines[0].File != "rank1.log" || noDev.Lines[0].Line != 1 {
		t.Fatalf("no-device evidence = %+v", noDev)
	}
}

// TestLogPrefixes checks that launcher prefixes do not change the verdict.
func TestLogPrefixes(t *testing.T) {
	base := "host-1:42:43 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA"
	for _, pre := range []string{"", "   ", "\t", "[1,0]<stdout>:", "[1,12]<stderr>:", "3: ", "12: ", "[default0]:", "[rank7]: ",
		"2025-01-02T03:04:05.123456Z ", "[pod/w-0/main] ", "2025-01-02T03:04:05.123456Z [1,0]<stdout>:  "} {
		r, err := AnalyzeLog(strings.NewReader(pre + base + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Transport != TransportIB || r.GDR == nil || !*r.GDR {
			t.Errorf("prefix %q: transport %s gdr %v", pre, r.Transport, ptrStr(r.GDR))
		}
	}
}

// TestLogLongLine checks that a line longer than any buffer neither fails nor hides later lines.
func TestLogLongLine(t *testing.T) {
	long := "h:1:1 [0] NCCL INFO " + strings.Repeat("x", 3<<20) + "\n"
	in := long + "h:1:1 [0] NCCL INFO Using network Socket\n"
	r, err := AnalyzeLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.Transport != TransportSocket || r.Lines != 2 {
		t.Fatalf("transport %s lines %d", r.Transport, r.Lines)
	}
}
