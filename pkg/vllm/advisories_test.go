package vllm

import (
	"strings"
	"testing"
)

// The pinned image is past every advisory ain knows; v0.11.0 (the old pin) is inside
// CVE-2026-22778's range; tags that are no version get a note that ain cannot tell.
func TestCheckImage(t *testing.T) {
	course := mustRead(t, "../../recipes/vllm.yaml")
	pinned := ""
	for _, l := range strings.Split(string(course), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "image: "); ok {
			pinned = s
		}
	}
	if c := CheckImage(pinned); c.Version == "" || c.Warning() != "" {
		t.Errorf("the course recipe's image %q: %+v %q", pinned, c, c.Warning())
	}
	old := CheckImage("vllm/vllm-openai:v0.11.0")
	if w := old.Warning(); old.Version != "0.11.0" || !strings.Contains(w, "CVE-2026-22778") || !strings.Contains(w, "GHSA-94f4-hr76-p5j6") || !strings.Contains(w, "v0.28.0") {
		t.Errorf("v0.11.0: %q", w)
	}
	// Just below and at a fix; a post release and a CUDA suffix are read as their version.
	if c := CheckImage("docker.io/vllm/vllm-openai:v0.27.1-cu130"); c.Version != "0.27.1" || len(c.Affected) != 1 || c.Affected[0].ID != "GHSA-3c86-2m5g-59q7" {
		t.Errorf("v0.27.1: %+v", c)
	}
	if c := CheckImage("registry:5000/vllm/vllm-openai:0.28.0.post1"); c.Version != "0.28.0.post1" || c.Warning() != "" {
		t.Errorf("0.28.0.post1: %+v %q", c, c.Warning())
	}
	// Outside an advisory's range (introduced later) is not affected by it.
	if c := CheckImage("vllm/vllm-openai:v0.8.2"); strings.Contains(c.Warning(), "CVE-2026-22778") {
		t.Errorf("v0.8.2 precedes CVE-2026-22778's range: %q", c.Warning())
	}
	for _, img := range []string{"vllm/vllm-openai:latest", "vllm/vllm-openai@sha256:" + strings.Repeat("a", 64), "vllm/vllm-openai", "registry:5000/vllm"} {
		if c := CheckImage(img); c.Version != "" || !strings.Contains(c.Warning(), "ain cannot tell") {
			t.Errorf("%s: %+v %q", img, c, c.Warning())
		}
	}
}

// A version past every advisory prints nothing, an old one a WARNING, an unknown one a note.
func TestImageCheckLine(t *testing.T) {
	if l := CheckImage("vllm/vllm-openai:v0.11.0").Line(); !strings.HasPrefix(l, "WARNING: image ") {
		t.Errorf("old: %q", l)
	}
	if l := CheckImage("vllm/vllm-openai:latest").Line(); !strings.HasPrefix(l, "note: image ") {
		t.Errorf("latest: %q", l)
	}
	if l := CheckImage("vllm/vllm-openai:v99.0.0").Line(); l != "" {
		t.Errorf("new: %q", l)
	}
}
