package dcgm

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/golden"
	"github.com/ain-hpc/ain/pkg/input"
)

// TestSamples: every sample parses to 8 GPUs with the key fields read, and its report matches
// its golden JSON.
func TestSamples(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) < 4 {
		t.Fatalf("samples: %v", files)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			s := golden.Parse(t, f, Parse)
			if len(s.GPUs) != 8 {
				t.Fatalf("%d GPUs, want 8", len(s.GPUs))
			}
			for i, g := range s.GPUs {
				if g.GPU != string(rune('0'+i)) || g.Host == "" || g.UUID == "" || g.Model != "NVIDIA H100 80GB HBM3" || g.XID == nil {
					t.Fatalf("GPU %d: %+v", i, g)
				}
			}
			golden.JSON(t, name, Analyze(s.GPUs))
		})
	}
}

func kinds(r *Report) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.Kind+":"+p.Severity+":"+p.Index)
	}
	return out
}

func TestSampleVerdicts(t *testing.T) {
	for _, tc := range []struct {
		file string
		ok   bool
		want []string
	}{
		{"healthy-8gpu.txt", true, nil},
		{"xid79.txt", false, []string{"xid:fail:3"}},
		{"throttled-thermal.txt", false, []string{"throttle:warn:2", "throttle:fail:6"}},
		{"idle-rank.txt", false, []string{"idle_rank:fail:5"}},
	} {
		s := golden.Parse(t, filepath.Join("testdata", tc.file), Parse)
		r := Analyze(s.GPUs)
		if r.OK != tc.ok || !slices.Equal(kinds(r), tc.want) {
			t.Errorf("%s: ok=%v %v, want ok=%v %v", tc.file, r.OK, kinds(r), tc.ok, tc.want)
		}
	}
	s := golden.Parse(t, "testdata/xid79.txt", Parse)
	g := s.GPUs[3]
	if g.UtilPct != nil || g.TempC != nil || g.FBUsedMiB != nil || *g.XID != 79 {
		t.Errorf("XID 79 GPU: DCGM blanks must read as absent: %+v", g)
	}
	p := Analyze(s.GPUs).Problems[0]
	if !strings.Contains(p.What, "fallen off the bus") || !strings.Contains(p.Fix, "drain") || p.Host != "dgx-h100-02" {
		t.Errorf("XID 79 problem: %+v", p)
	}
}

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }
func i64(v int64) *int64     { return &v }

func pod(g GPU, ns, name string) GPU { g.Namespace, g.Pod = ns, name; return g }

// TestVerdicts: each verdict on hand-made GPUs, and the cases that must stay quiet.
func TestVerdicts(t *testing.T) {
	busy := func(i string, u float64) GPU { return GPU{Host: "n1", GPU: i, UtilPct: f64(u)} }
	for _, tc := range []struct {
		name string
		gpus []GPU
		ok   bool
		want []string
		what string // in the first problem's What
	}{
		{"empty", nil, true, nil, ""},
		{"free GPUs at 0% are fine", []GPU{busy("0", 0), busy("1", 0)}, true, nil, ""},
		{"unknown xid", []GPU{{GPU: "0", XID: i64(119)}}, false, []string{"xid:fail:0"}, "XID 119 (the last"},
		{"xid 0 is none", []GPU{{GPU: "0", XID: i64(0)}}, true, nil, ""},
		{"hw thermal", []GPU{{GPU: "0", ClockEvents: u64(ClockHWThermal), TempC: f64(92)}}, false, []string{"throttle:fail:0"}, "thermal slowdown at 92 C"},
		{"hw slowdown", []GPU{{GPU: "0", ClockEvents: u64(ClockHWSlowdown)}}, false, []string{"throttle:fail:0"}, "hardware slowdown"},
		{"power brake", []GPU{{GPU: "0", ClockEvents: u64(ClockHWPowerBrake)}}, false, []string{"throttle:fail:0"}, "power brake"},
		{"power cap alone warns", []GPU{{GPU: "0", ClockEvents: u64(ClockSWPowerCap), PowerW: f64(700)}}, true, []string{"throttle:warn:0"}, "power limit at 700 W"},
		{"idle, sync boost, settings: not throttling", []GPU{{GPU: "0", ClockEvents: u64(ClockGPUIdle | ClockSyncBoost | ClockSetting | ClockDisplayClocks)}}, true, nil, ""},
		{"idle rank", []GPU{pod(busy("0", 98), "ml", "ft-worker-0"), pod(busy("1", 2), "ml", "ft-worker-1"), pod(busy("2", 95), "ml", "ft-master-0")},
			false, []string{"idle_rank:fail:1"}, "2% busy while 2 other GPU(s) of job ml/ft work at 95-98%"},
		{"other namespace is another job", []GPU{pod(busy("0", 98), "a", "ft-worker-0"), pod(busy("1", 0), "b", "ft-worker-1")},
			false, []string{"zero_util:fail:1"}, "0% busy, yet pod b/ft-worker-1 holds it"},
		{"half busy ranks are not idle", []GPU{pod(busy("0", 98), "ml", "ft-worker-0"), pod(busy("1", 30), "ml", "ft-worker-1")}, true, nil, ""},
		{"whole job at 0%", []GPU{pod(busy("0", 0), "ml", "srv-0"), pod(busy("1", 0), "ml", "srv-1")},
			false, []string{"zero_util:fail:0", "zero_util:fail:1"}, "0% busy"},
		{"SM activity stands in for utilisation", []GPU{pod(GPU{GPU: "0", SMActive: f64(0.97)}, "ml", "j-0"), pod(GPU{GPU: "1", SMActive: f64(0.01)}, "ml", "j-1")},
			false, []string{"idle_rank:fail:1"}, "1% busy"},
		{"no utilisation at all: no idle verdict", []GPU{pod(GPU{GPU: "0"}, "ml", "j-0")}, true, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Analyze(tc.gpus)
			if r.OK != tc.ok || !slices.Equal(kinds(r), tc.want) {
				t.Fatalf("ok=%v %v, want ok=%v %v", r.OK, kinds(r), tc.ok, tc.want)
			}
			if tc.what != "" && !strings.Contains(r.Problems[0].What, tc.what) {
				t.Fatalf("what %q, want %q in it", r.Problems[0].What, tc.what)
			}
			for _, p := range r.Problems {
				if p.Fix == "" || p.GPU == "" {
					t.Fatalf("problem without a fix or a GPU: %+v", p)
				}
			}
		})
	}
}

// TestJobOf: each line is a pod name and the job it belongs to.
func TestJobOf(t *testing.T) {
	const cases = `
llama-worker-3 llama
llama-master-0 llama
ft-node-0-1-x7k2p ft
mpi-job-worker-12 mpi-job
trainer-0 trainer
vllm-7d9f8b6c4-x2x7k vllm-7d9f8b6c4-x2x7k
job-launcher-b5t8d job-launcher-b5t8d
single single
ft-node-0-1-aeiou ft-node-0-1-aeiou
bert-pretrain-worker-0 bert-pretrain
indexed-job-3-m9q4z indexed-job
weird--0 weird-
0 0
worker worker
llama-ft-node-0-5-p8v2k llama-ft`
	// A Deployment's replicas (vllm-...) are not ranks; aeiou is no generated suffix (vowels).
	for _, line := range strings.Split(strings.TrimSpace(cases), "\n") {
		f := strings.Fields(line)
		if got := JobOf(f[0]); got != f[1] {
			t.Errorf("JobOf(%q) = %q, want %q", f[0], got, f[1])
		}
	}
}

// TestXIDMeanings: every XID the brief of issue 31 names has its catalog meaning and a fix in
// the problem it makes.
func TestXIDMeanings(t *testing.T) {
	for _, x := range []int64{13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95} {
		r := Analyze([]GPU{{Host: "h", GPU: "2", XID: i64(x)}})
		m := XIDMeaning(x)
		if m == "" || r.OK || len(r.Problems) != 1 || r.Problems[0].What != fmt.Sprintf("XID %d: %s", x, m) ||
			!strings.Contains(r.Problems[0].Fix, xidMeanings[x].fix) || *r.Problems[0].XID != x {
			t.Errorf("XID %d: %+v", x, r.Problems)
		}
	}
	for x, want := range map[int64]string{13: "graphics engine exception", 48: "double-bit ECC", 74: "NVLink", 94: "contained ECC", 95: "uncontained ECC"} {
		if !strings.Contains(XIDMeaning(x), want) {
			t.Errorf("XID %d: %q", x, XIDMeaning(x))
		}
	}
}

func TestClockReasons(t *testing.T) {
	got := ClockReasons(0x60 | 0x4 | 1<<12)
	want := []string{"sw_power_cap", "sw_thermal", "hw_thermal", "bit 12"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if len(ClockReasons(0)) != 0 {
		t.Error("0 has reasons")
	}
}

func TestBlank(t *testing.T) {
	for _, v := range []float64{9223372036854775794, 9223372036854775792, 1 << 47, 1<<47 + 15, 0x7ffffff0, 0x7fffffff} {
		if !Blank(v) {
			t.Errorf("%v is a blank", v)
		}
	}
	for _, v := range []float64{0, 79, 1<<47 + 16, 0x7fffffef, 1.5e11} {
		if Blank(v) {
			t.Errorf("%v is not a blank", v)
		}
	}
}

// TestParseShapes: pages from other exporters, Prometheus's federate output, odd values, and
// input that is not the text format.
func TestParseShapes(t *testing.T) {
	parse := func(s string) (*Sample, error) { return Parse(strings.NewReader(s)) }

	s, err := parse("# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.42\n")
	if err != nil || s.Series != 0 || len(s.GPUs) != 0 {
		t.Errorf("node-exporter page: %+v %v", s, err)
	}
	s, err = parse("")
	if err != nil || s.Series != 0 {
		t.Errorf("empty: %+v %v", s, err)
	}
	if _, err := parse("<html><body>Prometheus</body></html>\n"); err == nil {
		t.Error("HTML parsed")
	}

	// /federate: no HELP, extra labels, the lower-case hostname label, two hosts.
	s, err = parse(`# TYPE DCGM_FI_DEV_GPU_UTIL untyped
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",hostname="n2",instance="10.0.0.2:9400",job="gpu-metrics",pod="p-1",namespace="ns",container="c"} 7 1700000000000
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",hostname="n1",instance="10.0.0.1:9400",job="gpu-metrics"} 55 1700000000000
# TYPE DCGM_FI_DEV_GPU_TEMP untyped
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",hostname="n1"} NaN
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",hostname="n2",pod="p-1",namespace="ns",container="c"} +Inf
# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 counter
DCGM_FI_DEV_NVLINK_BANDWIDTH_L0{nvlink="0",gpu="0",gpu_uuid="GPU-a"} 5
# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",UUID="GPU-a",hostname="n1"} -1
`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Series != 6 || len(s.GPUs) != 2 || s.GPUs[0].Host != "n1" || s.GPUs[1].PodName() != "ns/p-1" {
		t.Fatalf("federate: %+v", s)
	}
	if s.GPUs[0].TempC != nil || s.GPUs[1].TempC != nil || s.GPUs[0].ClockEvents != nil || *s.GPUs[1].UtilPct != 7 {
		t.Errorf("NaN, Inf and a negative bitmask must read as absent: %+v", s.GPUs)
	}
	if _, err := json.Marshal(Analyze(s.GPUs)); err != nil {
		t.Error(err)
	}

	// The deprecated field name reads as the new one.
	s, _ = parse("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"h\"} 72\n")
	if g := s.GPUs[0]; g.ClockEvents == nil || *g.ClockEvents != 72 || !slices.Equal(g.ClockReasons, []string{"hw_slowdown", "hw_thermal"}) || g.Host != "h" {
		t.Errorf("old name: %+v", g)
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse(strings.NewReader(strings.Repeat("# x\n", MaxInput/4+1)))
	var large *input.TooLargeError
	if !errors.As(err, &large) {
		t.Errorf("got %v, want a TooLargeError", err)
	}
}

// FuzzParse: no input may panic; what parses is consistent (every GPU has a gpu or UUID label,
// at most Series of them) and its report encodes as JSON, each problem naming a GPU of the input
// with a fix, OK exactly when no problem fails.
func FuzzParse(f *testing.F) {
	f.Add([]byte("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"} 79\n"))
	f.Add([]byte("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod=\"a-0\"} 0\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\",pod=\"a-1\"} 99\n"))
	golden.FuzzParser(f, []string{"*.txt"}, Parse, nil, func(t *testing.T, s *Sample) {
		if len(s.GPUs) > s.Series {
			t.Fatalf("%d GPUs from %d series", len(s.GPUs), s.Series)
		}
		names := map[string]bool{}
		for i := range s.GPUs {
			g := &s.GPUs[i]
			if g.GPU == "" && g.UUID == "" {
				t.Fatalf("GPU without a gpu or UUID label: %+v", g)
			}
			names[g.Name()] = true
		}
		r := Analyze(s.GPUs)
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		fails := false
		for _, p := range r.Problems {
			if !names[p.GPU] || p.Fix == "" || p.What == "" {
				t.Fatalf("problem %+v", p)
			}
			fails = fails || p.Severity == SeverityFail
		}
		if r.OK == fails {
			t.Fatalf("ok=%v with a failing problem: %v", r.OK, fails)
		}
	})
}
