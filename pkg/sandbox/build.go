package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox/bincache"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// Versions of the components the sandbox runs. The binaries are cached per version.
const (
	// Kubernetes' k8s.io release is ain's and the Trainer's (v0.36.2: Trainer v2.3.0 does not
	// compile against v0.37), so its build reuses their compiled k8s.io/api, apimachinery and
	// client-go (see Components).
	KubernetesVersion       = "v1.36.2"
	KubernetesStagingVer    = "v0.36.2"
	EtcdVersion             = "v3.6.16"
	KwokVersion             = "v0.8.0"
	TrainingOperatorVersion = "v1.8.1"
	// The current stack (see Stack). Versions are named: the module proxy here refuses "latest"
	// lookups (the @v/list of these modules answers 403), so `go install MOD@VERSION` fails while it
	// loads the module's deprecation notice; they are built in wrapper modules that require them.
	MPIOperatorVersion = "v0.8.0"
	JobSetVersion      = "v0.12.0"
	TrainerVersion     = "v2.3.0"
)

// Component is one cached build: a folder of binaries (and manifests copied from its module).
type Component struct {
	Name    string
	Version string
	// Rev names a revision of ain's own build of that version (a wrapper main that changed):
	// the cache keeps each under its own folder, so a changed wrapper is rebuilt. "": none.
	Rev      string
	Binaries []string
	build    func(ctx context.Context, b *builder, dir string) error
}

// Dir is where this component's binaries live under the cache root.
func (c Component) Dir(cache string) string {
	return filepath.Join(cache, c.key())
}

// key names the component's build in the cache: name-version[-rev].
func (c Component) key() string {
	if c.Rev != "" {
		return c.Name + "-" + c.Version + "-" + c.Rev
	}
	return c.Name + "-" + c.Version
}

// Bin is the path of one of the component's binaries.
func (c Component) Bin(cache, name string) string { return filepath.Join(c.Dir(cache), name) }

// Built reports whether the component is complete in the cache.
func (c Component) Built(cache string) bool {
	_, err := os.Stat(filepath.Join(c.Dir(cache), ".complete"))
	return err == nil
}

// Components lists what the sandbox builds, in build order. The components share the Go build
// cache where their dependencies and flags agree, so the order matters more than each one's size:
// the Trainer (k8s.io v0.36.2, controller-runtime v0.24.1) comes first of the controllers, and
// JobSet, the mpi-operator and kwok are built against its requirements (their own ask for
// k8s.io v0.35.1-v0.36.1: Go's minimal version selection takes the Trainer's where higher), so
// they compile little more than themselves; all four are built with ain's own flags and module
// versions (goSettings), which are the Trainer's k8s.io release, so on a first run they also reuse
// what `go build` of ain compiled. Kubernetes is the release whose staging modules are that
// k8s.io version (v1.36.2: Trainer v2.3.0 does not compile against k8s.io/api v0.37, its generated
// OpenAPI code names corev1.PodStatusResult, removed there), built with its other requirements
// raised to ain's and etcd's (kubernetesPins): v1.37.2 shared nothing but the standard library
// with ain's build. etcd, first, is built against those same pins (Rev "k8s" + its staging
// version), so the gRPC, protobuf and OpenTelemetry packages it compiles serve the API server's
// build too.
// CoreDNS follows Kubernetes (corednsComponent). training-operator v1.8.1 (k8s.io v0.29) is kept
// as its module asks.
//
// Rev "t" + TrainerVersion marks a component built against the Trainer's requirements (its cache
// folder changes with them). A change of ain's own module versions does not move the folders:
// binaries built against earlier ones stay valid, and CI, which builds cold, meets any pin that
// breaks a build.
func Components() []Component {
	onTrainer := "t" + TrainerVersion
	return []Component{
		{Name: "etcd", Version: EtcdVersion, Rev: "k8s" + KubernetesStagingVer, Binaries: []string{"etcd"}, build: buildEtcd},
		{Name: "trainer", Version: TrainerVersion, Binaries: []string{"trainer-controller-manager"}, build: buildTrainer},
		{Name: "jobset", Version: JobSetVersion, Rev: onTrainer, Binaries: []string{"jobset"}, build: buildJobSet},
		// le2: the wrapper main elects a leader as app.Run does, with its own client
		// (data/wrappers/mpi-operator.go.txt).
		{Name: "mpi-operator", Version: MPIOperatorVersion, Rev: "le2-" + onTrainer, Binaries: []string{"mpi-operator"}, build: buildMPIOperator},
		{Name: "kwok", Version: KwokVersion, Rev: onTrainer, Binaries: []string{"kwok"}, build: buildKwok},
		{Name: "training-operator", Version: TrainingOperatorVersion, Binaries: []string{"training-operator.v1"}, build: buildTrainingOperator},
		{Name: "kubernetes", Version: KubernetesVersion, Binaries: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}, build: buildKubernetes},
		// After Kubernetes, whose compiled packages it reuses (corednsComponent).
		corednsComponent(),
	}
}

func component(name string) Component {
	for _, c := range Components() {
		if c.Name == name {
			return c
		}
	}
	panic("unknown component " + name)
}

// CacheDir is the root of the binary cache: $AIN_SANDBOX_CACHE, else
// $XDG_CACHE_HOME/ain/sandbox-bin, else ~/.cache/ain/sandbox-bin (bincache.Dir).
func CacheDir(getenv func(string) string) (string, error) { return bincache.Dir(getenv) }

// BuildError says which component failed to build, with the command and its output.
type BuildError struct {
	Component string
	Cmd       string
	Output    string
	Err       error
}

func (e *BuildError) Error() string {
	out := strings.TrimSpace(e.Output)
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	return fmt.Sprintf("building sandbox component %s: %s: %v\n%s", e.Component, e.Cmd, e.Err, out)
}

func (e *BuildError) Unwrap() error { return e.Err }

// EnsureBinaries builds every component (of every stack) missing from cache, reporting progress on w.
// Builds run in temporary wrapper modules (go install refuses modules with replace
// directives), never in the caller's module.
func EnsureBinaries(ctx context.Context, cache string, w io.Writer) error {
	return EnsureBinariesProgress(ctx, cache, w, nil)
}

// BuildProgress is called by EnsureBinariesProgress before the first build and after each
// component: done of total missing components are built; building is the one now building ("" at
// the end).
type BuildProgress func(done, total int, building string)

// EnsureBinariesProgress is EnsureBinaries that also reports each step to progress (which may be
// nil), for callers that draw their own progress line (ain demo builds in the background).
func EnsureBinariesProgress(ctx context.Context, cache string, w io.Writer, progress BuildProgress) error {
	return ensure(ctx, cache, Components(), w, progress)
}

// EnsureStack builds the components of stack missing from cache (see EnsureBinariesProgress).
func EnsureStack(ctx context.Context, cache string, stack Stack, w io.Writer, progress BuildProgress) error {
	return ensure(ctx, cache, stack.Components(), w, progress)
}

func ensure(ctx context.Context, cache string, comps []Component, w io.Writer, progress BuildProgress) error {
	if progress == nil {
		progress = func(int, int, string) {}
	}
	if w == nil {
		w = io.Discard
	}
	var missing []Component
	for _, c := range comps {
		if !c.Built(cache) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return &BuildError{Component: missing[0].Name, Cmd: "go", Err: fmt.Errorf("the Go toolchain is needed to build the sandbox binaries: %w", err)}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		// The folder comes from AIN_SANDBOX_CACHE when set (bincache.Dir): the bare mkdir error
		// named neither.
		return fmt.Errorf("the sandbox binary cache (AIN_SANDBOX_CACHE, else ~/.cache/ain/sandbox-bin): %w", err)
	}
	fmt.Fprintf(w, "Building %d sandbox component(s) into %s (first use only; takes several minutes cold)\n", len(missing), cache)
	settings := hostSettings()
	fmt.Fprintf(w, "  with ain's build settings: %s\n", settings)
	goMods := map[string]goModRequires{} // moduleRequires' answers, read once for all the components
	start := time.Now()
	for i, c := range missing {
		progress(i, len(missing), c.Name)
		t0 := time.Now()
		// Another process (a parallel test binary, a user's `ain sandbox up`) may be building the
		// same component: wait for it rather than build twice.
		unlock, err := lockFile(filepath.Join(cache, c.key()+".lock"), 0o600)
		if err != nil {
			return err
		}
		if c.Built(cache) {
			unlock()
			fmt.Fprintf(w, "  [%d/%d] %s %s built by another process\n", i+1, len(missing), c.Name, c.Version)
			continue
		}
		fmt.Fprintf(w, "  [%d/%d] %s %s ...\n", i+1, len(missing), c.Name, c.Version)
		dir := c.Dir(cache)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			unlock()
			return err
		}
		b := &builder{w: w, component: c.Name, settings: settings, goMods: goMods}
		err = c.build(ctx, b, dir)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, ".complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
		}
		unlock()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  [%d/%d] %s %s built in %s\n", i+1, len(missing), c.Name, c.Version, time.Since(t0).Round(time.Second))
	}
	progress(len(missing), len(missing), "")
	fmt.Fprintf(w, "Sandbox components built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

type builder struct {
	w         io.Writer
	component string
	settings  goSettings
	// goMods are the go.mod files moduleRequires has read in this ensure, by module@version: the
	// controllers share the Trainer's, Kubernetes and CoreDNS k8s.io/kubernetes'. nil: none kept.
	goMods map[string]goModRequires
}

// run runs a go command in dir with env added, streaming a line of progress for downloads.
func (b *builder) run(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.settings.cgo, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		downloads := 0
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			if strings.HasPrefix(line, "go: downloading") {
				downloads++
				if downloads%25 == 1 {
					fmt.Fprintf(b.w, "        downloading modules (%d so far)\n", downloads)
				}
			}
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return out.String(), &BuildError{Component: b.component, Cmd: "go " + strings.Join(args, " "), Output: out.String(), Err: err}
	}
	return out.String(), nil
}

// goBuild is the argument list of go VERB (build or install) with the settings' flags before args.
func (b *builder) goBuild(verb string, args ...string) []string {
	return append(append([]string{verb}, b.settings.buildFlags()...), args...)
}

// moduleDir downloads a module and returns its folder in the module cache.
func (b *builder) moduleDir(ctx context.Context, tmp, mod string) (string, string, error) {
	out, err := b.run(ctx, tmp, nil, "mod", "download", "-json", mod)
	if err != nil {
		return "", "", err
	}
	var info struct{ Dir, GoMod, Error string }
	// go mod download -json may print "go: downloading" lines before the JSON object.
	if i := strings.Index(out, "{"); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return "", "", fmt.Errorf("reading go mod download output for %s: %w", mod, err)
	}
	if info.Error != "" {
		return "", "", fmt.Errorf("downloading %s: %s", mod, info.Error)
	}
	return info.Dir, info.GoMod, nil
}

func wrapperDir(name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "ain-sandbox-build-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// wrapperGoMod is the go.mod of a wrapper module named after component that requires mod (the
// module whose commands it builds) and, as minimums, pins (Go's minimal version selection takes
// the higher of a pin and mod's own requirement; a pin of mod itself is left out). replace holds
// modules at the version given, each replaced by its own published release: what a module's
// go.mod does with folders of its repository (Kubernetes' staging modules, etcd's siblings),
// which a dependency's go.mod cannot do.
func wrapperGoMod(component string, mod module.Version, pins, replace []module.Version) ([]byte, error) {
	f := new(modfile.File)
	if err := f.AddModuleStmt("ain.local/sandbox/" + component); err != nil {
		return nil, err
	}
	if err := f.AddGoStmt("1.26.0"); err != nil {
		return nil, err
	}
	f.AddNewRequire(mod.Path, mod.Version, false)
	for _, p := range pins {
		if p.Path != mod.Path {
			f.AddNewRequire(p.Path, p.Version, false)
		}
	}
	for _, r := range replace {
		if err := f.AddReplace(r.Path, "", r.Path, r.Version); err != nil {
			return nil, err
		}
	}
	return f.Format()
}

func writeWrapper(dir string, gomod []byte, imports []string) error {
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	var tools strings.Builder
	tools.WriteString("//go:build tools\n\n// Package tools pins the commands this wrapper module builds.\npackage tools\n\nimport (\n")
	for _, imp := range imports {
		fmt.Fprintf(&tools, "\t_ %q\n", imp)
	}
	tools.WriteString(")\n")
	return os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools.String()), 0o644)
}

// buildEtcd builds etcd's server against the versions Kubernetes is built against
// (kubernetesPins, at or above etcd's own), so that the packages both link compile once. Its
// sibling modules stay at EtcdVersion (etcd's go.mod replaces them with folders of its
// repository); buildWrapped refuses a pin that moves the server itself.
func buildEtcd(ctx context.Context, b *builder, dir string) error {
	pins, _, err := kubernetesPins(ctx, b)
	if err != nil {
		return err
	}
	var siblings []module.Version
	for _, m := range []string{"api/v3", "client/pkg/v3", "client/v3", "pkg/v3"} {
		siblings = append(siblings, module.Version{Path: "go.etcd.io/etcd/" + m, Version: EtcdVersion})
	}
	_, err = buildWrapped(ctx, b, dir, "go.etcd.io/etcd/server/v3", EtcdVersion, pins, siblings, nil, map[string]string{"etcd": "go.etcd.io/etcd/server/v3"})
	return err
}

func buildKwok(ctx context.Context, b *builder, dir string) error {
	pins, err := controllerPins(ctx, b)
	if err != nil {
		return err
	}
	src, err := buildWrapped(ctx, b, dir, "sigs.k8s.io/kwok", KwokVersion, pins, nil, nil, map[string]string{"kwok": "sigs.k8s.io/kwok/cmd/kwok"})
	if err != nil {
		return err
	}
	return copyYAML(filepath.Join(src, "kustomize", "crd", "bases"), filepath.Join(dir, "crds"))
}

func buildTrainingOperator(ctx context.Context, b *builder, dir string) error {
	tmp, cleanup, err := wrapperDir("training-operator")
	if err != nil {
		return err
	}
	defer cleanup()
	mod := "github.com/kubeflow/training-operator"
	if _, err := b.run(ctx, tmp, []string{"GOBIN=" + dir}, b.goBuild("install", "-ldflags", "-s -w", mod+"/cmd/training-operator.v1@"+TrainingOperatorVersion)...); err != nil {
		return err
	}
	src, _, err := b.moduleDir(ctx, tmp, mod+"@"+TrainingOperatorVersion)
	if err != nil {
		return err
	}
	return copyYAML(filepath.Join(src, "manifests", "base", "crds"), filepath.Join(dir, "crds"))
}

// moduleRequires downloads module mod at version and reads its go.mod: its requirements, and the
// modules it replaces with a folder of its own repository (./staging/... in k8s.io/kubernetes,
// which requires them at v0.0.0), each given at stagingVersion instead, the version it is
// published at.
func moduleRequires(ctx context.Context, b *builder, mod, version, stagingVersion string) (requires []module.Version, staging []string, err error) {
	key := mod + "@" + version + " " + stagingVersion
	if r, ok := b.goMods[key]; ok {
		return r.requires, r.staging, nil
	}
	defer func() {
		if err == nil && b.goMods != nil {
			b.goMods[key] = goModRequires{requires, staging}
		}
	}()
	tmp, cleanup, err := wrapperDir(b.component + "-requires")
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	// A throwaway module so that "go mod download" has somewhere to run.
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module ain.local/sandbox/requires\n\ngo 1.26.0\n"), 0o644); err != nil {
		return nil, nil, err
	}
	_, goModPath, err := b.moduleDir(ctx, tmp, mod+"@"+version)
	if err != nil {
		return nil, nil, err
	}
	raw, err := os.ReadFile(goModPath)
	if err != nil {
		return nil, nil, err
	}
	// Parse, not ParseLax: ParseLax skips replace directives, as the go command does in a dependency.
	f, err := modfile.Parse(goModPath, raw, nil)
	if err != nil {
		return nil, nil, &BuildError{Component: b.component, Cmd: "reading " + goModPath, Err: err}
	}
	isStaging := map[string]bool{}
	for _, r := range f.Replace {
		if r.New.Version == "" && strings.HasPrefix(r.New.Path, "./") {
			isStaging[r.Old.Path] = true
			staging = append(staging, r.Old.Path)
		}
	}
	for _, r := range f.Require {
		v := r.Mod
		if isStaging[v.Path] {
			v.Version = stagingVersion
		}
		requires = append(requires, v)
	}
	return requires, staging, nil
}

// goModRequires is what moduleRequires read of one go.mod.
type goModRequires struct {
	requires []module.Version
	staging  []string
}

// kubernetesModule is moduleRequires of k8s.io/kubernetes at KubernetesVersion, its staging
// modules at KubernetesStagingVer.
func kubernetesModule(ctx context.Context, b *builder) (requires []module.Version, staging []string, err error) {
	requires, staging, err = moduleRequires(ctx, b, "k8s.io/kubernetes", KubernetesVersion, KubernetesStagingVer)
	if err == nil && len(staging) == 0 {
		err = &BuildError{Component: b.component, Cmd: "reading k8s.io/kubernetes@" + KubernetesVersion + "'s go.mod", Err: fmt.Errorf("no staging replace directives found")}
	}
	return requires, staging, err
}

// kubernetesPins are the requirements etcd, Kubernetes and CoreDNS are built against:
// k8s.io/kubernetes' own and etcd's, raised to the versions ain was built with (goSettings), and
// Kubernetes' staging modules at KubernetesStagingVer whatever ain has (ain may require one of them
// at a later release, as it does k8s.io/streaming, for a package Kubernetes does not share).
//
// etcd's are in because the API server links etcd's client, gRPC, protobuf and OpenTelemetry,
// which etcd's own build compiles first: Kubernetes v1.36.2 asks for grpc v1.79.3, etcd client
// v3.6.8 and otel v1.41.0, etcd v3.6.16 for grpc v1.83.2, v3.6.16 and v1.45.0 (their go.mod
// files), and at two versions 215 of etcd's 367 packages compiled twice in a cold build. At one
// version each they compile once, and the API server's etcd client is the server's release.
func kubernetesPins(ctx context.Context, b *builder) (pins []module.Version, staging []string, err error) {
	requires, staging, err := kubernetesModule(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	etcd, _, err := moduleRequires(ctx, b, "go.etcd.io/etcd/server/v3", EtcdVersion, "")
	if err != nil {
		return nil, nil, err
	}
	pins = mergePins(requires, etcd, b.settings.deps)
	for i := range pins {
		if slices.Contains(staging, pins[i].Path) {
			pins[i].Version = KubernetesStagingVer
		}
	}
	return pins, staging, nil
}

// controllerPins are the requirements the controllers of the current stack and kwok are built
// against (see Components): the Trainer's, raised to the versions ain itself was built with
// (goSettings), which ain's own go.mod keeps at or above the Trainer's as it requires the
// Trainer's module.
func controllerPins(ctx context.Context, b *builder) ([]module.Version, error) {
	requires, _, err := moduleRequires(ctx, b, "github.com/kubeflow/trainer/v2", TrainerVersion, "")
	if err != nil {
		return nil, err
	}
	return mergePins(requires, b.settings.deps), nil
}

func buildKubernetes(ctx context.Context, b *builder, dir string) error {
	pins, staging, err := kubernetesPins(ctx, b)
	if err != nil {
		return err
	}
	// k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with its own
	// folders: the wrapper replaces them with their published versions.
	var replace []module.Version
	for _, m := range staging {
		replace = append(replace, module.Version{Path: m, Version: KubernetesStagingVer})
	}
	// No kubectl: neither ain nor the sandbox runs it, and its own packages (k8s.io/kubectl,
	// kustomize, cli-runtime: 194 of the 2648 the four binaries need, measured with go list -deps)
	// and its link were part of every cold build. Users bring their own kubectl.
	cmds := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	var imports []string
	for _, c := range cmds {
		imports = append(imports, "k8s.io/kubernetes/cmd/"+c)
	}
	// One go build for the three (buildWrapped runs one a binary): they share most packages.
	tmp, cleanup, err := prepareWrapper(ctx, b, "k8s.io/kubernetes", KubernetesVersion, pins, replace, nil, imports)
	if err != nil {
		return err
	}
	defer cleanup()
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	var ld []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld,
			"-X "+pkg+".gitVersion="+KubernetesVersion,
			"-X "+pkg+".gitMajor=1",
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean",
			"-X "+pkg+".buildDate=1970-01-01T00:00:00Z")
	}
	args := append([]string{"-ldflags", "-s -w " + strings.Join(ld, " "), "-o", dir + string(filepath.Separator)}, imports...)
	_, err = b.run(ctx, tmp, nil, b.goBuild("build", args...)...)
	return err
}

// copyYAML copies the *.yaml files of src into dst.
func copyYAML(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
