package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsTheCoursesCluster(t *testing.T) {
	p := Default()
	s := p.Spec
	if s.Fabric != "ib" || s.RDMA.Resource != "rdma/rdma_shared_device_a" || s.RDMA.Count != 1 || s.GPUResource != "nvidia.com/gpu" || s.GIDIndex != "auto" || len(s.HCAs) != 0 || len(s.Networks) != 0 {
		t.Errorf("default profile: %+v", s)
	}
	if err := p.Validate(nil); err != nil {
		t.Fatal(err)
	}
	if p.Origins["spec.fabric"] != "default" {
		t.Errorf("origins %v", p.Origins)
	}
}

func TestTemplateParsesAndOrigins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ain", "profile.yaml")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(Template), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": dir}
	p, err := Load(Options{Getenv: func(k string) string { return env[k] }, Fabric: "roce"})
	if err != nil {
		t.Fatalf("the init template must load: %v", err)
	}
	if p.Source != path || p.Spec.Fabric != "roce" || p.Origins["spec.fabric"] != "--fabric" {
		t.Errorf("source %s fabric %s origins %v", p.Source, p.Spec.Fabric, p.Origins)
	}
	if !strings.HasPrefix(p.Origins["spec.lineRate"], path+":") {
		t.Errorf("lineRate origin %q", p.Origins["spec.lineRate"])
	}
	if _, err := Load(Options{Fabric: "infiniband", Getenv: func(string) string { return "" }}); err == nil {
		t.Error("--fabric infiniband accepted")
	}
	if _, err := Load(Options{Path: filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("an explicit missing profile must be an error")
	}
}

func TestLineRate(t *testing.T) {
	for in, want := range map[string]float64{"400Gb": 400e9, "200G": 200e9, "100Gbps": 100e9, "25Gb/s": 25e9, "1.6Tb": 1.6e12,
		"400": 400e9, "200GbE": 200e9, "800Mb": 800e6, " 400 Gb ": 400e9, "100Gbit": 100e9} {
		got, err := ParseLineRate(in)
		if err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	// NaN, infinities, zero and words are refused, with the field's fix in the message.
	for _, bad := range []string{"", "0", "-1G", "fast", "G", "nanGb", "NaN", "infG", "+Inf", "1e400G"} {
		if v, err := ParseLineRate(bad); err == nil || !strings.Contains(err.Error(), "e.g. 400Gb") {
			t.Errorf("ParseLineRate(%q) = %v, %v", bad, v, err)
		}
	}
	p := Default()
	if g := p.LineRateGBps(); g != 50 {
		t.Errorf("400Gb = 50 GB/s, got %v", g)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(Template))
	f.Add([]byte("apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec: {fabric: roce, gidIndex: '3', networks: [a/b@c]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err == nil {
			if err := p.Validate(nil); err != nil {
				t.Fatalf("Parse accepted an invalid profile: %v", err)
			}
		}
	})
}

// spec.requireBench: the folder is required, maxAge is a duration of 0 or more (default 24h);
// each mistake names its field and line.
func TestRequireBench(t *testing.T) {
	head := "apiVersion: ain.dev/v1alpha1\nkind: FabricProfile\nspec:\n  fabric: ib\n  requireBench:\n"
	p, err := Parse("p.yaml", []byte(head+"    results: ain-results\n"))
	if err != nil || p.Spec.RequireBench.Results != "ain-results" || p.Spec.RequireBench.BenchMaxAge() != 24*time.Hour {
		t.Fatalf("%v %+v", err, p)
	}
	p, err = Parse("p.yaml", []byte(head+"    results: r\n    maxAge: 0s\n"))
	if err != nil || p.Spec.RequireBench.BenchMaxAge() != 0 {
		t.Fatalf("maxAge 0s: %v", err)
	}
	for body, want := range map[string]string{
		"    maxAge: 2h\n":                  "p.yaml:5: spec.requireBench.results: name the folder",
		"    results: r\n    maxAge: 1d\n":  `p.yaml:7: spec.requireBench.maxAge: "1d" is not a duration`,
		"    results: r\n    maxAge: -1h\n": `spec.requireBench.maxAge: "-1h" is not a duration of 0 or more`,
		"    results: r\n    maxage: 1h\n":  "maxage",
	} {
		if _, err := Parse("p.yaml", []byte(head+body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
