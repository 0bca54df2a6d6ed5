package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/module"
)

// mpiOperatorMain is the wrapper main of the mpi-operator build (why: see the file's comment).
//
//go:embed data/wrappers/mpi-operator.go.txt
var mpiOperatorMain []byte

// buildWrapped builds the commands of module mod at version in a wrapper module that requires it
// (go install MOD@VERSION is refused here, see MPIOperatorVersion). bins maps each output binary
// name to its package path; "." is the wrapper's own main, mainSrc. It returns the module's folder
// in the module cache, for the manifests the caller copies. pins (may be nil) are further
// requirements of the wrapper: minimum versions of the module's dependencies (Go's minimal
// version selection takes the higher of a pin and the module's own requirement); replace holds
// modules at a version (wrapperGoMod).
func buildWrapped(ctx context.Context, b *builder, dir, mod, version string, pins, replace []module.Version, mainSrc []byte, bins map[string]string) (string, error) {
	var imports []string
	for _, pkg := range bins {
		if pkg != "." {
			imports = append(imports, pkg)
		}
	}
	sort.Strings(imports)
	tmp, cleanup, err := prepareWrapper(ctx, b, mod, version, pins, replace, mainSrc, imports)
	if err != nil {
		return "", err
	}
	defer cleanup()
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := b.run(ctx, tmp, nil, b.goBuild("build", "-ldflags", "-s -w", "-o", filepath.Join(dir, n), bins[n])...); err != nil {
			return "", err
		}
	}
	src, _, err := b.moduleDir(ctx, tmp, mod+"@"+version)
	return src, err
}

// prepareWrapper writes the wrapper module of component b.component in a temporary folder (its
// go.mod from wrapperGoMod, tools.go importing imports, main.go when mainSrc is given), tidies it
// and checks that the pins left mod at version. The caller builds in the folder, then calls
// cleanup.
func prepareWrapper(ctx context.Context, b *builder, mod, version string, pins, replace []module.Version, mainSrc []byte, imports []string) (string, func(), error) {
	tmp, cleanup, err := wrapperDir(b.component)
	if err != nil {
		return "", nil, err
	}
	err = func() error {
		gomod, err := wrapperGoMod(b.component, module.Version{Path: mod, Version: version}, pins, replace)
		if err != nil {
			return err
		}
		if err := writeWrapper(tmp, gomod, imports); err != nil {
			return err
		}
		if mainSrc != nil {
			if err := os.WriteFile(filepath.Join(tmp, "main.go"), mainSrc, 0o644); err != nil {
				return err
			}
		}
		if len(imports) == 0 {
			// Nothing to pin beside main.go, whose package (main) would clash with tools.go's.
			_ = os.Remove(filepath.Join(tmp, "tools.go"))
		}
		if _, err := b.run(ctx, tmp, nil, "mod", "tidy"); err != nil {
			return err
		}
		if len(pins) > 0 {
			// A pin must not move the module itself (a pinned module that requires a later
			// version of it would): what is built is the version named.
			out, err := b.run(ctx, tmp, nil, "list", "-m", "-f", "{{.Version}}", mod)
			if err != nil {
				return err
			}
			if got := strings.TrimSpace(out); got != version {
				return &BuildError{Component: b.component, Cmd: "go list -m " + mod, Output: out, Err: fmt.Errorf("the pinned requirements select %s %s, not %s", mod, got, version)}
			}
		}
		return nil
	}()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp, cleanup, nil
}

// buildMPIOperator builds the MPIJob v2beta1 controller and copies its CRD. The module keeps its
// CRD in deploy/v2beta1/mpi-operator.yaml (one file with the Namespace, CRD, RBAC and Deployment;
// applyCRDs takes only the CustomResourceDefinition).
func buildMPIOperator(ctx context.Context, b *builder, dir string) error {
	pins, err := controllerPins(ctx, b)
	if err != nil {
		return err
	}
	src, err := buildWrapped(ctx, b, dir, "github.com/kubeflow/mpi-operator", MPIOperatorVersion, pins, nil, mpiOperatorMain,
		map[string]string{"mpi-operator": "."})
	if err != nil {
		return err
	}
	return copyFiles(filepath.Join(src, "deploy", "v2beta1"), filepath.Join(dir, "crds"), "mpi-operator.yaml")
}

// buildJobSet builds the JobSet controller manager (the module root's main.go) and copies its CRD
// (config/components/crd/bases) and webhook configurations (config/components/webhook: manifests.yaml
// and the JSON patches its kustomization applies, see webhookConfigs).
func buildJobSet(ctx context.Context, b *builder, dir string) error {
	pins, err := controllerPins(ctx, b)
	if err != nil {
		return err
	}
	src, err := buildWrapped(ctx, b, dir, "sigs.k8s.io/jobset", JobSetVersion, pins, nil, nil, map[string]string{"jobset": "sigs.k8s.io/jobset"})
	if err != nil {
		return err
	}
	if err := copyYAML(filepath.Join(src, "config", "components", "crd", "bases"), filepath.Join(dir, "crds")); err != nil {
		return err
	}
	wh := filepath.Join(src, "config", "components", "webhook")
	if err := copyFiles(wh, filepath.Join(dir, "webhook"), "manifests.yaml"); err != nil {
		return err
	}
	return copyFiles(filepath.Join(wh, "patches"), filepath.Join(dir, "webhook"), "mutating-patch.yaml", "validating-patch.yaml")
}

// buildTrainer builds Kubeflow Trainer's controller manager (cmd/trainer-controller-manager) and
// copies its CRDs (manifests/base/crds), webhook configurations with their patches
// (manifests/base/webhook) and the built-in ClusterTrainingRuntimes (manifests/base/runtimes/*.yaml).
func buildTrainer(ctx context.Context, b *builder, dir string) error {
	pins, err := controllerPins(ctx, b)
	if err != nil {
		return err
	}
	src, err := buildWrapped(ctx, b, dir, "github.com/kubeflow/trainer/v2", TrainerVersion, pins, nil, nil,
		map[string]string{"trainer-controller-manager": "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"})
	if err != nil {
		return err
	}
	base := filepath.Join(src, "manifests", "base")
	if err := copyYAML(filepath.Join(base, "crds"), filepath.Join(dir, "crds")); err != nil {
		return err
	}
	if err := copyFiles(filepath.Join(base, "webhook"), filepath.Join(dir, "webhook"), "manifests.yaml", "patch_mutating.yaml", "patch_validating.yaml"); err != nil {
		return err
	}
	return copyYAML(filepath.Join(base, "runtimes"), filepath.Join(dir, "runtimes"))
}

// copyFiles copies the named files of src into dst.
func copyFiles(src, dst string, names ...string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if !strings.HasSuffix(n, ".yaml") {
			return fmt.Errorf("copyFiles: %s is not YAML", n)
		}
		if err := os.WriteFile(filepath.Join(dst, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
