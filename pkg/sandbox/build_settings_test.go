package sandbox

import (
	"context"
	"errors"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
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

// A test binary's build info has settings but no modules: it takes cmd/ain's, the modules a
// go build of ain links (not the whole build list, whose extra modules a wrapper would download).
func TestHostSettingsOfThisBinary(t *testing.T) {
	s := hostSettings()
	has := func(path string) bool {
		return slices.ContainsFunc(s.deps, func(m module.Version) bool { return m.Path == path })
	}
	if !has("k8s.io/client-go") || !has("github.com/kubeflow/trainer/v2") {
		t.Errorf("no k8s.io/client-go or Trainer among the %d modules: %v", len(s.deps), s.deps)
	}
	// mpi-operator v0.8.0's go.mod requires golangci-lint (a tool): in the build list, never linked.
	if has("github.com/golangci/golangci-lint/v2") {
		t.Errorf("a module cmd/ain does not link is pinned: %v", s.deps)
	}
	if len(s.deps) > 200 {
		t.Errorf("%d modules: the whole build list, not cmd/ain's", len(s.deps))
	}
	t.Logf("%s", s)
}

func TestCgoSetting(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	found := func(string) (string, error) { return "/usr/bin/gcc", nil }
	missing := func(string) (string, error) { return "", errors.New("not found") }
	var asked string
	record := func(f string) (string, error) { asked = f; return f, nil }
	for _, c := range []struct {
		name, ain string
		getenv    func(string) string
		look      func(string) (string, error)
		want      string
	}{
		{"ain with cgo, gcc here", "1", env(), found, "1"},
		{"ain with cgo, no C compiler here", "1", env(), missing, "0"},
		{"ain without cgo", "0", env(), found, "0"},
		{"the user's CGO_ENABLED=0 wins", "1", env("CGO_ENABLED", "0"), found, "0"},
		{"the user's CGO_ENABLED=1 wins", "0", env("CGO_ENABLED", "1"), missing, "1"},
		{"CC names the compiler", "1", env("CC", "clang -fno-x"), record, "1"},
	} {
		if got := cgoSetting(c.ain, c.getenv, c.look); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if asked != "clang" {
		t.Errorf("looked up %q, want CC's first word clang", asked)
	}
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

// One ensure reads each go.mod once: a second moduleRequires of the same module answers from the
// builder's goMods without running go (the kept answer here names no real module).
func TestModuleRequiresKept(t *testing.T) {
	kept := goModRequires{requires: []module.Version{{Path: "example.com/kept", Version: "v1.2.3"}}, staging: []string{"example.com/staged"}}
	b := &builder{component: "test", goMods: map[string]goModRequires{"k8s.io/kubernetes@" + KubernetesVersion + " " + KubernetesStagingVer: kept}}
	req, staging, err := kubernetesModule(context.Background(), b)
	if err != nil || len(req) != 1 || req[0].Path != "example.com/kept" || len(staging) != 1 {
		t.Errorf("kubernetesModule with a kept go.mod = %v, %v, %v; want the kept answer", req, staging, err)
	}
}

// Kubernetes and etcd are built against one set of versions: the higher of the two go.mod files'
// requirements and ain's, Kubernetes' staging modules at their published release.
func TestKubernetesPinsIncludeEtcd(t *testing.T) {
	b := &builder{component: "test", settings: goSettings{deps: []module.Version{{Path: "golang.org/x/net", Version: "v0.62.0"}}},
		goMods: map[string]goModRequires{
			"k8s.io/kubernetes@" + KubernetesVersion + " " + KubernetesStagingVer: {
				requires: []module.Version{
					{Path: "google.golang.org/grpc", Version: "v1.79.3"},
					{Path: "go.etcd.io/etcd/client/v3", Version: "v3.6.8"},
					{Path: "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc", Version: "v0.65.0"},
					{Path: "golang.org/x/net", Version: "v0.49.0"},
					{Path: "k8s.io/api", Version: KubernetesStagingVer},
				},
				staging: []string{"k8s.io/api"},
			},
			"go.etcd.io/etcd/server/v3@" + EtcdVersion + " ": {
				requires: []module.Version{
					{Path: "google.golang.org/grpc", Version: "v1.83.2"},
					{Path: "go.etcd.io/etcd/client/v3", Version: EtcdVersion},
					{Path: "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc", Version: "v0.59.0"},
					{Path: "go.uber.org/zap", Version: "v1.27.0"},
				},
			},
		}}
	pins, staging, err := kubernetesPins(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range pins {
		got[p.Path] = p.Version
	}
	want := map[string]string{
		"google.golang.org/grpc":    "v1.83.2",   // etcd's, above Kubernetes'
		"go.etcd.io/etcd/client/v3": EtcdVersion, // the server's release
		"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc": "v0.65.0", // Kubernetes', above etcd's
		"golang.org/x/net": "v0.62.0", // ain's
		"go.uber.org/zap":  "v1.27.0", // etcd's alone
		"k8s.io/api":       KubernetesStagingVer,
	}
	if !maps.Equal(got, want) || !slices.Equal(staging, []string{"k8s.io/api"}) {
		t.Errorf("kubernetesPins = %v, staging %v; want %v, [k8s.io/api]", got, staging, want)
	}
}

// A wrapper's go.mod requires its module at the version named, whatever a pin asks (Kubernetes
// requires etcd's server at an older release), the other pins as minimums, and holds the
// replaced modules at their release (etcd's siblings here).
func TestWrapperGoMod(t *testing.T) {
	var siblings []module.Version
	for _, m := range []string{"api/v3", "client/pkg/v3", "client/v3", "pkg/v3"} {
		siblings = append(siblings, module.Version{Path: "go.etcd.io/etcd/" + m, Version: EtcdVersion})
	}
	text, err := wrapperGoMod("etcd", module.Version{Path: "go.etcd.io/etcd/server/v3", Version: EtcdVersion}, []module.Version{
		{Path: "go.etcd.io/etcd/server/v3", Version: "v3.6.8"},
		{Path: "go.etcd.io/etcd/client/v3", Version: EtcdVersion},
		{Path: "google.golang.org/grpc", Version: "v1.83.2"},
	}, siblings)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", text, nil)
	if err != nil {
		t.Fatalf("wrapperGoMod does not parse: %v\n%s", err, text)
	}
	if f.Module.Mod.Path != "ain.local/sandbox/etcd" || f.Go.Version != "1.26.0" {
		t.Errorf("module %q go %q, want ain.local/sandbox/etcd, 1.26.0", f.Module.Mod.Path, f.Go.Version)
	}
	req := map[string]string{}
	for _, r := range f.Require {
		req[r.Mod.Path] = r.Mod.Version
	}
	want := map[string]string{"go.etcd.io/etcd/server/v3": EtcdVersion, "go.etcd.io/etcd/client/v3": EtcdVersion, "google.golang.org/grpc": "v1.83.2"}
	if !maps.Equal(req, want) {
		t.Errorf("requires %v, want %v", req, want)
	}
	rep := map[string]string{}
	for _, r := range f.Replace {
		if r.Old.Path != r.New.Path || r.Old.Version != "" {
			t.Errorf("replace %s %s => %s: want every version of the module replaced by its release", r.Old.Path, r.Old.Version, r.New.Path)
		}
		rep[r.Old.Path] = r.New.Version
	}
	for _, m := range siblings {
		if v := rep[m.Path]; v != EtcdVersion {
			t.Errorf("%s replaced at %q, want %s", m.Path, v, EtcdVersion)
		}
	}
	if len(rep) != len(siblings) {
		t.Errorf("replaces %v, want etcd's four siblings only", rep)
	}
}

// A cache folder that cannot be made is named with where it comes from.
func TestEnsureNamesTheCache(t *testing.T) {
	err := ensure(context.Background(), "/proc/ain-no-such-cache", []Component{{Name: "x", Version: "v1", Binaries: []string{"x"}}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "AIN_SANDBOX_CACHE") || !strings.Contains(err.Error(), "/proc/ain-no-such-cache") {
		t.Errorf("ensure into an impossible folder: %v; want the folder and AIN_SANDBOX_CACHE named", err)
	}
}
