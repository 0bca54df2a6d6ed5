package preflight

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ain-hpc/ain/pkg/next"
	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/recipe"
)

// CheckImage is the check of the recipe's image (course 12.1.2): it can be pulled, and holds the
// commands and Python modules the recipe's program uses.
const CheckImage = "image"

const probeImage = "image"

// ImageMarker is in every image probe's command and its output's first line (the sandbox
// answers on it).
const ImageMarker = "ain-image-probe"

// imageScript prints, one line each: "C name path" for a command on PATH ("-" when absent), "Y
// path version" for the Python interpreter, and "M module version" for each module (its
// distribution's version from importlib.metadata, "?" when it imports without metadata, "-" and
// the reason when it does not import). Modules are looked up, not imported: importing torch or
// vllm takes seconds and wants a GPU for some of its checks.
func imageScript(t recipe.Tools) string {
	var b strings.Builder
	b.WriteString("echo '" + ImageMarker + " 1 " + strings.ReplaceAll(t.Image, "'", "") + "'\n")
	for _, c := range t.Commands {
		q := shellQuote(c)
		b.WriteString(`p=$(command -v ` + q + ` 2>/dev/null) || p=-; echo "C ` + strings.ReplaceAll(c, `"`, "") + ` $p"` + "\n")
	}
	mods := strings.Join(t.Modules, " ")
	b.WriteString(`py=$(command -v python3 2>/dev/null || command -v python 2>/dev/null) || { echo "Y - -"; echo END; exit 0; }
"$py" - ` + mods + ` <<'EOF'
import sys
print("Y %s %d.%d.%d" % ((sys.executable,) + tuple(sys.version_info[:3])))
import importlib.util
try:
    import importlib.metadata as md
except ImportError:
    md = None
for m in sys.argv[1:]:
    v = None
    if md is not None:
        try:
            v = md.version(m)
        except Exception:
            v = None
    if v is None:
        try:
            v = "?" if importlib.util.find_spec(m) is not None else None
        except Exception as e:
            print("M %s - %s: %s" % (m, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            continue
    print("M %s %s" % (m, v if v else "- not installed"))
EOF
echo END
`)
	return b.String()
}

// ImageReport is what the image probe printed.
type ImageReport struct {
	Image    string
	Commands map[string]string // name -> path, "-" when absent
	Python   string            // "path version", "" when none
	Modules  map[string]string // name -> version, "?" or "- reason"
	Complete bool
}

// ParseImageReport reads the image probe's output.
func ParseImageReport(out []byte) (*ImageReport, error) {
	r := &ImageReport{Commands: map[string]string{}, Modules: map[string]string{}}
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(l, ImageMarker+" 1"); ok {
			seen, r.Image = true, strings.TrimSpace(rest)
			continue
		}
		if !seen {
			continue
		}
		tag, rest, _ := strings.Cut(l, " ")
		name, val, _ := strings.Cut(rest, " ")
		switch {
		case tag == "END":
			r.Complete = true
		case tag == "C" && name != "":
			r.Commands[name] = strings.TrimSpace(val)
		case tag == "Y":
			if name != "-" {
				r.Python = strings.TrimSpace(rest)
			}
		case tag == "M" && name != "":
			r.Modules[name] = strings.TrimSpace(val)
		}
	}
	if !seen {
		return nil, fmt.Errorf("the image probe printed no %q line: it did not run its script", ImageMarker)
	}
	return r, nil
}

// JudgeImage is one check: PASS with every version, or FAIL naming the image and what is
// missing, with the fix.
func JudgeImage(rep *ImageReport, t recipe.Tools) Check {
	c := Check{Name: CheckImage, Target: t.Image, Status: Pass}
	var have, missing []string
	for _, cmd := range t.Commands {
		if p := rep.Commands[cmd]; p != "" && p != "-" {
			have = append(have, cmd+" "+p)
		} else {
			missing = append(missing, "command "+cmd)
		}
	}
	if len(t.Modules) > 0 && rep.Python == "" {
		missing = append(missing, "python3 (the modules "+strings.Join(t.Modules, ", ")+" need it)")
	} else if rep.Python != "" {
		have = append(have, "python "+rep.Python[strings.LastIndex(rep.Python, " ")+1:])
	}
	var missingMods []string
	for _, m := range t.Modules {
		v, ok := rep.Modules[m]
		switch {
		case rep.Python == "":
		case !ok || v == "" || strings.HasPrefix(v, "-"):
			missingMods = append(missingMods, m)
			missing = append(missing, "Python module "+m+strings.TrimPrefix(strings.TrimPrefix(v, "-"), " not installed"))
		default:
			have = append(have, m+" "+v)
		}
	}
	c.Evidence = have
	if len(missing) == 0 {
		c.Message = fmt.Sprintf("image %s has what the recipe runs: %s", t.Image, strings.Join(have, ", "))
		if !rep.Complete {
			c.Status, c.Message = Warn, c.Message+" (the probe's output was cut short)"
			c.Fix, c.Next = "run it again", []next.Command{"preflight"}
		}
		return c
	}
	c.Status = Fail
	c.Message = fmt.Sprintf("image %s lacks %s", t.Image, strings.Join(missing, ", "))
	if len(missing) == len(missingMods) && allIn(missingMods, t.Installs) {
		c.Status = Warn
		c.Message += fmt.Sprintf(": the recipe's command pip-installs %s at start, which needs the package index (PyPI) from every pod", strings.Join(missingMods, ", "))
	}
	fix := "use an image that has them (a pinned tag, not :latest)"
	if len(missingMods) > 0 {
		fix = fmt.Sprintf("build a derived image: FROM %s, then RUN pip install %s (pinned versions), push it to your registry (an air-gapped cluster cannot pip install at run time) and set spec.image; or use a pinned tag that has them", t.Image, strings.Join(missingMods, " "))
	}
	c.Fix = fix
	return c
}

func allIn(s, set []string) bool {
	for _, v := range s {
		if !slices.Contains(set, v) {
			return false
		}
	}
	return true
}

// imagePullCheck is the check of an image probe whose pod did not run: its image could not be
// pulled (the reason and the registry's message), it was still being pulled at the timeout, or
// something else kept it from starting.
func imagePullCheck(image string, out *probe.Outcome, timeout string) Check {
	c := Check{Name: CheckImage, Target: image, Status: Fail, Evidence: []string{out.NotRun()}}
	reason, msg := "", ""
	if out.CreateErr == nil {
		reason, msg = probe.PullProblem(out.Pod)
	}
	switch reason {
	case "":
		c.Message = "the image probe pod did not run within " + timeout
		c.Fix = "kubectl describe pod shows why (kubectl get events)"
	case probe.Pulling:
		c.Status = Warn
		c.Message = fmt.Sprintf("image %s was still being pulled after %s (a training or serving image is several GB)", image, timeout)
		c.Fix = "run it again once the node has the image, or pre-pull it on the GPU nodes; --probe-timeout waits longer"
		c.Next = []next.Command{"preflight"}
	default:
		c.Message = fmt.Sprintf("image %s cannot be pulled: %s", image, strings.TrimSpace(reason+" "+msg))
		c.Fix = "check the image name and tag, and that the nodes can reach its registry: an air-gapped cluster needs the image mirrored into its own registry (and spec.image pointing there), a private registry an imagePullSecret"
	}
	return c
}

// checkImage runs the recipe's image once, on the first candidate node (where it will be pulled
// for the job anyway), and checks what the recipe uses is in it.
func checkImage(ctx context.Context, o Options, candidates []corev1.Node) []Check {
	t := o.Tools
	if t.Image == "" || (len(t.Commands) == 0 && len(t.Modules) == 0) {
		return nil
	}
	img := o.ProbeOptions()
	img.Image, img.PullPolicy = t.Image, corev1.PullPolicy(o.ImagePullPolicy)
	run := probe.NewRun()
	pod := probe.Pod(img, run, probe.Spec{Kind: probeImage, Name: "ain-image-" + run, Script: imageScript(t), ResultMessage: true})
	c := &pod.Spec.Containers[0]
	c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	// NVIDIA's images set NVIDIA_VISIBLE_DEVICES=all: on a GPU node whose container runtime
	// injects by that variable (nvidia-container-toolkit's legacy mode), the probe, which requests
	// no GPU, would be handed every GPU of the node. "void" gives it none (the toolkit's
	// documented value for "no GPU").
	c.Env = append(c.Env, corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: "void"})
	if len(candidates) > 0 {
		pinToNode(pod, &candidates[0])
	}
	o.Progress("checking the image " + t.Image + " for " + strings.Join(append(append([]string{}, t.Commands...), t.Modules...), ", "))
	res := probe.Run(ctx, o.ProbeOptions(), run, []*corev1.Pod{pod})[0]
	if res.Log == nil {
		return []Check{imagePullCheck(t.Image, res, o.ProbeTimeout.String())}
	}
	rep, err := ParseImageReport(res.Log)
	if err != nil {
		return []Check{{Name: CheckImage, Target: t.Image, Status: Fail, Message: err.Error(),
			Evidence: limit(strings.Split(strings.TrimSpace(string(res.Log)), "\n")), Fix: "the image needs /bin/sh to be checked"}}
	}
	return []Check{JudgeImage(rep, t)}
}
