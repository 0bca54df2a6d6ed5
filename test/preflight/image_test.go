package preflight_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/preflight"
)

func imageCheck(t *testing.T, r *preflight.Result) preflight.Check {
	t.Helper()
	var found []preflight.Check
	for _, c := range r.Checks {
		if c.Name == preflight.CheckImage {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one image check, got %+v", found)
	}
	return found[0]
}

// The built-in recipes' images as they are: the trl image lacks bitsandbytes, which the qlora
// command installs at start (a WARN: it needs PyPI); the vllm image has vllm.
func TestImageProbeBuiltins(t *testing.T) {
	sb, ns := setup(t, "healthy")
	_, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "-o", "json")
	c := imageCheck(t, decode(t, out))
	if c.Status != preflight.Warn || c.Target != "huggingface/trl:0.25.1" || !strings.Contains(c.Message, "lacks Python module bitsandbytes") ||
		!strings.Contains(strings.Join(c.Evidence, " "), "trl 0.25.1") {
		t.Errorf("qlora: %+v", c)
	}
	_, out, _ = ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "vllm", "-o", "json")
	c = imageCheck(t, decode(t, out))
	if c.Status != preflight.Pass || !strings.Contains(c.Message, "vllm /usr/local/bin/vllm") || !strings.Contains(c.Message, "vllm 0.30.0") {
		t.Errorf("vllm: %+v", c)
	}
	noProbePods(t, sb, ns)
}

// An image without a module the recipe uses fails the preflight, naming the image, the module
// and the fix.
func TestImageProbeMissingModule(t *testing.T) {
	sb, ns := setup(t, "image-missing-module")
	code, out, _ := ain(t, context.Background(), sb, newEnv(t), ns, "preflight", "qlora", "-o", "json")
	if code != int(ainerr.PreflightFailed) {
		t.Errorf("exit %d, want %d", code, ainerr.PreflightFailed)
	}
	c := imageCheck(t, decode(t, out))
	if c.Status != preflight.Fail || !strings.Contains(c.Message, "image huggingface/trl:0.25.1 lacks Python module peft") ||
		!strings.Contains(c.Fix, "RUN pip install peft bitsandbytes") {
		t.Errorf("%+v", c)
	}
}
