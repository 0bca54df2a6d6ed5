package sandbox

import (
	"os"
	"os/exec"
	"runtime/debug"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// goSettings are the settings the components are built with. They are those of the running ain
// (its build info), so that a cold `ain sandbox build` reuses the packages that `go build` of ain
// compiled minutes before: cmd/go keys each compiled package by its flags (-trimpath; CGO_ENABLED,
// with which std's net and os/user build differently, and every package importing them follows)
// and by the exact versions of everything it imports. The components built on ain's k8s.io
// release (the Trainer, JobSet, the mpi-operator, kwok) then compile little beyond themselves.
type goSettings struct {
	trimpath bool
	cgo      string           // CGO_ENABLED for the go command: "0" or "1"
	deps     []module.Version // the modules linked into ain, at ain's versions
}

// hostSettings reads the running binary's build info. Without one (a binary built without module
// information), the components build as they did before: -trimpath, no cgo, no pins.
func hostSettings() goSettings {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return goSettings{trimpath: true, cgo: "0"}
	}
	s := settingsOf(bi)
	if len(s.deps) == 0 {
		// go test records the settings but no modules: a test binary (ain's, which builds the
		// sandbox in CI) takes the build list of the module it runs in, which go test compiled.
		s.deps = buildList()
	}
	return s
}

// buildList is `go list -m all` of the module around the working directory, without the main
// module and replaced modules; nil outside a module or where the go command fails.
func buildList() []module.Version {
	cmd := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{if not .Replace}}{{.Path}} {{.Version}}{{end}}{{end}}", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var deps []module.Version
	for _, line := range strings.Split(string(out), "\n") {
		if path, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && v != "" {
			deps = append(deps, module.Version{Path: path, Version: v})
		}
	}
	return deps
}

func settingsOf(bi *debug.BuildInfo) goSettings {
	s := goSettings{cgo: "0"}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "-trimpath":
			s.trimpath = kv.Value == "true"
		case "CGO_ENABLED":
			if kv.Value == "1" {
				s.cgo = "1"
			}
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			// A replaced module (a local fork, another path) is not the one a component
			// requires; its versions would say nothing about the component's.
			continue
		}
		if d.Version == "" || d.Version == "(devel)" {
			continue
		}
		s.deps = append(s.deps, module.Version{Path: d.Path, Version: d.Version})
	}
	return s
}

// buildFlags are the go build flags the settings ask for, before the command's own.
func (s goSettings) buildFlags() []string {
	if s.trimpath {
		return []string{"-trimpath"}
	}
	return nil
}

// mergePins takes, for each module in any of the lists, its highest version: what Go's minimal
// version selection would select from them, written out so a go.mod names each module once.
func mergePins(lists ...[]module.Version) []module.Version {
	top := map[string]string{}
	for _, l := range lists {
		for _, m := range l {
			if v, ok := top[m.Path]; !ok || semver.Compare(m.Version, v) > 0 {
				top[m.Path] = m.Version
			}
		}
	}
	out := make([]module.Version, 0, len(top))
	for p, v := range top {
		out = append(out, module.Version{Path: p, Version: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
