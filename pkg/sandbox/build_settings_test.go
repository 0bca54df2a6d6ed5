package sandbox

import (
	"runtime/debug"
	"slices"
	"testing"

	"golang.org/x/mod/module"
)

func TestSettingsOf(t *testing.T) {
	bi := &debug.BuildInfo{
		Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "1"}},
		Deps: []*debug.Module{
			{Path: "k8s.io/api", Version: "v0.36.2"},
			{Path: "example.com/fork", Version: "v1.0.0", Replace: &debug.Module{Path: "../fork"}},
			{Path: "example.com/dev", Version: "(devel)"},
		},
	}
	s := settingsOf(bi)
	if !s.trimpath || s.cgo != "1" {
		t.Errorf("settings %+v: want -trimpath and cgo 1", s)
	}
	if want := []module.Version{{Path: "k8s.io/api", Version: "v0.36.2"}}; !slices.Equal(s.deps, want) {
		t.Errorf("deps %v, want %v (replaced and devel modules left out)", s.deps, want)
	}
	if got := s.buildFlags(); !slices.Equal(got, []string{"-trimpath"}) {
		t.Errorf("buildFlags %v", got)
	}
	// What `go build` without flags records on a machine without a C compiler: no -trimpath
	// setting, CGO_ENABLED=0.
	s = settingsOf(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "CGO_ENABLED", Value: "0"}}})
	if s.trimpath || s.cgo != "0" || len(s.buildFlags()) != 0 {
		t.Errorf("plain build without cgo: %+v flags %v", s, s.buildFlags())
	}
}

// The test binary is built by go test with the flags go build of ain would use: its build info
// must say so, or the sandbox build would not share ain's compiled packages.
func TestHostSettingsOfThisBinary(t *testing.T) {
	s := hostSettings()
	if !slices.ContainsFunc(s.deps, func(m module.Version) bool { return m.Path == "k8s.io/client-go" }) {
		t.Errorf("this binary's build info has no k8s.io/client-go among %d deps", len(s.deps))
	}
	t.Logf("trimpath %v, CGO_ENABLED %s, %d deps", s.trimpath, s.cgo, len(s.deps))
}

func TestMergePins(t *testing.T) {
	got := mergePins(
		[]module.Version{{Path: "b", Version: "v1.2.0"}, {Path: "a", Version: "v0.36.2"}},
		[]module.Version{{Path: "a", Version: "v0.36.10"}, {Path: "b", Version: "v1.1.9"}, {Path: "c", Version: "v0.0.0-20260101000000-abcdef123456"}},
	)
	want := []module.Version{{Path: "a", Version: "v0.36.10"}, {Path: "b", Version: "v1.2.0"}, {Path: "c", Version: "v0.0.0-20260101000000-abcdef123456"}}
	if !slices.Equal(got, want) {
		t.Errorf("mergePins = %v, want %v (semver order, not string order: v0.36.10 > v0.36.2)", got, want)
	}
}
