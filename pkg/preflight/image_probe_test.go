package preflight

import (
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ain-hpc/ain/pkg/probe"
	"github.com/ain-hpc/ain/pkg/recipe"
)

var qloraTools = recipe.Tools{Image: "huggingface/trl:0.25.1", Commands: []string{"torchrun"},
	Modules: []string{"torch", "transformers", "trl", "peft", "bitsandbytes"}, Installs: []string{"bitsandbytes"}}

// trlOutput is what the probe prints in huggingface/trl:0.25.1 (no bitsandbytes).
const trlOutput = `ain-image-probe 1 huggingface/trl:0.25.1
C torchrun /opt/conda/bin/torchrun
Y /opt/conda/bin/python3 3.11.13
M torch 2.8.0
M transformers 4.57.1
M trl 0.25.1
M peft 0.17.1
M bitsandbytes - not installed
END
`

func TestJudgeImage(t *testing.T) {
	rep, err := ParseImageReport([]byte(trlOutput))
	if err != nil {
		t.Fatal(err)
	}
	c := JudgeImage(rep, qloraTools)
	if c.Status != Warn || !strings.Contains(c.Message, "lacks Python module bitsandbytes") || !strings.Contains(c.Message, "pip-installs bitsandbytes at start") ||
		!strings.Contains(c.Fix, "RUN pip install bitsandbytes") || !strings.Contains(c.Fix, "air-gapped") {
		t.Errorf("bitsandbytes installed by the command: %+v", c)
	}
	noPeft := strings.Replace(trlOutput, "M peft 0.17.1", "M peft - not installed", 1)
	rep, _ = ParseImageReport([]byte(noPeft))
	c = JudgeImage(rep, qloraTools)
	if c.Status != Fail || !strings.Contains(c.Message, "image huggingface/trl:0.25.1 lacks Python module peft, Python module bitsandbytes") || !strings.Contains(c.Fix, "FROM huggingface/trl:0.25.1") {
		t.Errorf("peft missing: %+v", c)
	}
	all := strings.Replace(trlOutput, "M bitsandbytes - not installed", "M bitsandbytes 0.49.2", 1)
	rep, _ = ParseImageReport([]byte(all))
	c = JudgeImage(rep, qloraTools)
	if c.Status != Pass || !strings.Contains(c.Message, "torchrun /opt/conda/bin/torchrun, python 3.11.13, torch 2.8.0") || !strings.Contains(c.Message, "bitsandbytes 0.49.2") {
		t.Errorf("complete: %+v", c)
	}
	rep, _ = ParseImageReport([]byte("ain-image-probe 1 alpine:3.20\nC torchrun -\nY - -\nEND\n"))
	c = JudgeImage(rep, qloraTools)
	if c.Status != Fail || !strings.Contains(c.Message, "command torchrun, python3") {
		t.Errorf("no python: %+v", c)
	}
}

// The script's Python part, run by this machine's python3: a module without metadata that
// imports (the standard library's json) is "?", one that is not there "- not installed".
func TestImageScriptPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine to run the script's Python part")
	}
	tools := recipe.Tools{Image: "x", Commands: []string{"sh", "ain-no-such-command"}, Modules: []string{"json", "ain_no_such_module"}}
	out, err := exec.Command("/bin/sh", "-c", imageScript(tools)).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rep, err := ParseImageReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Commands["sh"] == "-" || rep.Commands["ain-no-such-command"] != "-" || rep.Python == "" ||
		rep.Modules["json"] != "?" || rep.Modules["ain_no_such_module"] != "- not installed" || !rep.Complete {
		t.Errorf("report %+v from\n%s", rep, out)
	}
}

func TestImagePullCheck(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "ain-image-1"
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason:  "ImagePullBackOff",
		Message: `Back-off pulling image "registry.local/trl:0.25.1"`,
	}}}}
	c := imagePullCheck("registry.local/trl:0.25.1", &probe.Outcome{Pod: pod, Created: true}, "2m0s")
	if c.Status != Fail || !strings.Contains(c.Message, "cannot be pulled: ImagePullBackOff Back-off pulling") || !strings.Contains(c.Fix, "air-gapped") {
		t.Errorf("%+v", c)
	}
	pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	if c := imagePullCheck("x", &probe.Outcome{Pod: pod, Created: true}, "2m0s"); c.Status != Warn || !strings.Contains(c.Message, "still being pulled") {
		t.Errorf("%+v", c)
	}
}

func FuzzParseImageReport(f *testing.F) {
	f.Add([]byte(trlOutput))
	f.Add([]byte("ain-image-probe 1\nM\nC\nY\nM a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := ParseImageReport(b)
		if err != nil {
			return
		}
		if c := JudgeImage(rep, qloraTools); c.Status != Pass && c.Fix == "" {
			t.Fatalf("a %s check without a fix: %+v", c.Status, c)
		}
	})
}
