package image

import (
	"strings"
	"testing"
)

func TestPinOf(t *testing.T) {
	dig := "@sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		ref  string
		want Pin
	}{
		{"ubuntu", MovingTag},
		{"ubuntu:latest", MovingTag},
		{"mellanox/cuda-perftest:latest", MovingTag},
		{"huggingface/trl:dev", MovingTag},
		{"ghcr.io/x/y:Nightly", MovingTag},
		{"huggingface/trl:0.25.1", VersionTag},
		{"vllm/vllm-openai:v0.30.0", VersionTag},
		{"localhost:5000/a/b:1", VersionTag},
		{"localhost:5000/a/b", MovingTag}, // the port is not a tag
		{"networkstatic/iperf3" + dig, Digest},
		{"networkstatic/iperf3:latest" + dig, Digest}, // the digest wins over the tag
	}
	for _, c := range cases {
		got, err := PinOf(c.ref)
		if err != nil || got != c.want {
			t.Errorf("PinOf(%q) = %v, %v; want %v", c.ref, got, err, c.want)
		}
		if w := MovingWarning(c.ref); (w != "") != (c.want == MovingTag) || (w != "" && !strings.Contains(w, c.ref)) {
			t.Errorf("MovingWarning(%q) = %q", c.ref, w)
		}
	}
	if _, err := PinOf("UPPER/Case:tag"); err == nil {
		t.Error("PinOf accepted an invalid reference")
	}
}

// TestCheckMessages: the parser's own messages reach the user.
func TestCheckMessages(t *testing.T) {
	for ref, want := range map[string]string{
		"UPPER/Case:tag":                       "must be lowercase",
		"pytorch:":                             "invalid reference format",
		"img@sha256:zz":                        "invalid reference format",
		"a@sha256:" + strings.Repeat("ab", 16): "invalid checksum digest length",
		strings.Repeat("ab", 32):               "cannot specify 64-byte hexadecimal strings",
	} {
		err := Check(ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", ref, err, want)
		}
	}
	for _, ref := range []string{"ubuntu", "nvcr.io/nvidia/pytorch:24.05-py3", "[::1]:5000/a/b", "Registry.Example.com/a/b:1"} {
		if err := Check(ref); err != nil {
			t.Errorf("Check(%q) = %v", ref, err)
		}
	}
	if got := Repository("ubuntu:22.04"); got != "docker.io/library/ubuntu" {
		t.Errorf("Repository = %q", got)
	}
}

func TestKnown(t *testing.T) {
	trl := "huggingface/trl:0.25.1"
	for _, ref := range []string{trl, "docker.io/huggingface/trl:0.25.1", "index.docker.io/huggingface/trl:0.25.1", trl + "@sha256:" + strings.Repeat("cd", 32)} {
		if a := Arches(ref); len(a) != 1 || a[0] != "amd64" {
			t.Errorf("Arches(%q) = %v, want [amd64]", ref, a)
		}
	}
	// Another tag of a known repository is another build: nothing is known of it.
	for _, ref := range []string{"huggingface/trl:0.26.0", "huggingface/trl", "huggingface/trl@sha256:" + strings.Repeat("cd", 32), "busybox:1.36"} {
		if a := Arches(ref); a != nil {
			t.Errorf("Arches(%q) = %v, want nil", ref, a)
		}
	}
	for _, f := range known {
		if p, err := PinOf(f.Ref); err != nil || p == MovingTag {
			t.Errorf("known %s: %v %v: ain's own images name a release", f.Ref, p, err)
		}
		if f.Source == "" || len(f.Arches) == 0 {
			t.Errorf("known %s: no source or arches", f.Ref)
		}
	}
}

// FuzzPinOf: any string is classified without a panic, and refused exactly when Check refuses it.
func FuzzPinOf(f *testing.F) {
	for _, s := range []string{"ubuntu", "a:latest", "a@sha256:" + strings.Repeat("ab", 32), "UPPER", "", ":", "a b", "localhost:5000/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := PinOf(s)
		if (err == nil) != (Check(s) == nil) {
			t.Errorf("%q: PinOf err %v, Check err %v", s, err, Check(s))
		}
		_ = Arches(s)
	})
}
