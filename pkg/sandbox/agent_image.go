package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// imageMarker is in the preflight image probe's script (pkg/preflight ImageMarker).
const imageMarker = "ain-image-probe"

// runsImageProbe reports whether pod's container is the image probe.
func runsImageProbe(pod *corev1.Pod) (string, bool) { return probeScript(pod, imageMarker) }

// ImageContents is an image's content as an image sample describes it, one entry a line:
//
//	python /opt/conda/bin/python3 3.11.13     the interpreter on PATH and its version
//	command /opt/conda/bin/torchrun           an executable on PATH
//	module trl 0.25.1                         an installed Python distribution
type ImageContents struct {
	Python, PythonVersion string
	Commands              []string
	Modules               map[string]string
}

// ParseImageContents reads an image sample; # comments and blank lines are skipped.
func ParseImageContents(desc string) (ImageContents, error) {
	ic := ImageContents{Modules: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(desc))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "python" && len(f) == 3 && path.IsAbs(f[1]):
			ic.Python, ic.PythonVersion = f[1], f[2]
		case f[0] == "command" && len(f) == 2 && path.IsAbs(f[1]):
			ic.Commands = append(ic.Commands, f[1])
		case f[0] == "module" && len(f) == 3:
			ic.Modules[f[1]] = f[2]
		default:
			return ic, fmt.Errorf("image sample line %q: want python PATH VERSION, command PATH or module NAME VERSION", sc.Text())
		}
	}
	return ic, sc.Err()
}

// runImageProbe runs the image probe's own script over the image a sample describes: its
// commands are stub executables at their paths under a simulated root on the script's PATH, its
// python3 a stub answering the script's lookups from the sample's modules (the Python part of
// the script is not run: the sandbox has no such image). The simulated root is cut from what it
// printed, so the paths read as in the image.
func runImageProbe(ctx context.Context, pod *corev1.Pod, script, desc, dir string) (out, termMsg string, err error) {
	ic, err := ParseImageContents(desc)
	if err != nil {
		return "", "", err
	}
	root := filepath.Join(dir, "image")
	if err := os.RemoveAll(root); err != nil {
		return "", "", err
	}
	var pathDirs []string
	stub := func(p, body string) error {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if d := filepath.Dir(f); !strings.Contains(strings.Join(pathDirs, ":"), d) {
			pathDirs = append(pathDirs, d)
		}
		return os.WriteFile(f, []byte("#!/bin/sh\n"+body), 0o755)
	}
	for _, c := range ic.Commands {
		if err := stub(c, "exit 0\n"); err != nil {
			return "", "", err
		}
	}
	if ic.Python != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "while read -r _; do :; done\necho \"Y %s %s\"\nshift\nfor m; do case $m in\n", ic.Python, ic.PythonVersion)
		for m, v := range ic.Modules {
			fmt.Fprintf(&b, "%s) echo \"M %s %s\";;\n", m, m, v)
		}
		b.WriteString("*) echo \"M $m - not installed\";;\nesac; done\n")
		if err := stub(ic.Python, b.String()); err != nil {
			return "", "", err
		}
	}
	termPath := pod.Spec.Containers[0].TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	termFile := filepath.Join(root, filepath.FromSlash(termPath))
	if err := os.MkdirAll(filepath.Dir(termFile), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	// Only the image's directories and the shell's own tools: a python3 of this machine must not answer.
	cmd.Env = []string{"PATH=" + strings.Join(append(pathDirs, "/nonexistent-ain"), ":"), SysfsRootEnv + "=" + root}
	var b bytes.Buffer
	cmd.Stdout = &b
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			return "", "", err
		}
	}
	return strings.ReplaceAll(b.String(), root, ""), strings.ReplaceAll(readTermMessage(termFile), root, ""), nil
}
