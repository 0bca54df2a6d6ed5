package sandbox

import (
	"fmt"
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
	s := goSettings{trimpath: true, cgo: "0"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		s = settingsOf(bi)
	}
	if len(s.deps) == 0 {
		// go test records the settings but no modules: a test binary of ain's (which builds the
		// sandbox in CI) takes the modules of cmd/ain as go build would link them.
		s.deps = ainModules()
	}
	s.cgo = cgoSetting(s.cgo, os.Getenv, exec.LookPath)
	return s
}

// cgoSetting is CGO_ENABLED for the component builds: the user's, where the environment sets it
// (as for any go build), else ain's, but "0" where no C compiler is found: ain may have been built
// on another machine, and cgo would fail every build here (cmd/go turns cgo off by default
// only where its default compiler is missing, and CC from the environment names another).
func cgoSetting(ain string, getenv func(string) string, lookPath func(string) (string, error)) string {
	if v := getenv("CGO_ENABLED"); v == "0" || v == "1" {
		return v
	}
	if ain != "1" {
		return "0"
	}
	cc := "gcc"
	if f := strings.Fields(getenv("CC")); len(f) > 0 {
		cc = f[0]
	}
	if _, err := lookPath(cc); err != nil {
		return "0"
	}
	return "1"
}

// ainModule is ain's module path.
const ainModule = "github.com/ain-hpc/ain"

// ainModules lists the modules of the packages cmd/ain links, at the versions of the module
// around the working directory, which must be ain's (a test binary runs in its package's
// folder); nil elsewhere or where the go command fails. Only linked modules, as in a built ain's
// build info: the full build list (`go list -m all`, about 400 modules) names modules whose
// go.mod files are in no cache, which a wrapper would then download.
func ainModules() []module.Version {
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		return cmd.Output()
	}
	if out, err := goCmd("list", "-m"); err != nil || strings.TrimSpace(string(out)) != ainModule {
		return nil
	}
	out, err := goCmd("list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{if not .Replace}}{{.Path}} {{.Version}}{{end}}{{end}}{{end}}", ainModule+"/cmd/ain")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var deps []module.Version
	for _, line := range strings.Split(string(out), "\n") {
		path, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && v != "" && !seen[path] {
			seen[path] = true
			deps = append(deps, module.Version{Path: path, Version: v})
		}
	}
	return deps
}

// String says what the settings are, for the build's output.
func (s goSettings) String() string {
	tp := "no -trimpath"
	if s.trimpath {
		tp = "-trimpath"
	}
	return fmt.Sprintf("CGO_ENABLED=%s, %s, %d module versions of ain's", s.cgo, tp, len(s.deps))
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
