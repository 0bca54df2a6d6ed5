package recipe

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/strict"
)

// TestImageReferenceValidated: an image that is a number, has uppercase in the repository or
// holds a space is refused at its file line (issue 19: all three were accepted), for training
// and serving recipes and from --set; real references pass.
func TestImageReferenceValidated(t *testing.T) {
	bad := []struct{ image, want string }{
		{"5", "is a int, not an image reference"},
		{"5.1", "is a float"},
		{"true", "is a bool"},
		{`"UPPER/Case:tag"`, "not a valid image reference"},
		{`"nvcr.io/nvidia/pytorch :24.05"`, "whitespace"},
		{`"pytorch:"`, "not a valid image reference"},
		{`"a//b"`, "not a valid image reference"},
		{`"img@sha256:zz"`, "not a valid image reference"},
	}
	good := []string{"nvcr.io/nvidia/pytorch:24.05-py3", "vllm/vllm-openai:v0.6.3", "localhost:5000/x/y", "Registry.Example.com/a/b:1",
		"ubuntu", `"5000"`, "ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32)}
	for _, kind := range []string{"MPIJob", "Serving"} {
		body := "apiVersion: ain.dev/v1alpha1\nkind: MPIJob\nmetadata:\n  name: x\nspec:\n  image: %s\n  nodes: 1\n  command: [a]\n"
		if kind == "Serving" {
			body = "apiVersion: ain.dev/v1alpha1\nkind: Serving\nmetadata:\n  name: x\nspec:\n  image: %s\n  model: org/m\n"
		}
		for _, c := range bad {
			_, err := Parse("r.yaml", []byte(strings.Replace(body, "%s", c.image, 1)), nil)
			var ps strict.Problems
			if !errors.As(err, &ps) {
				t.Errorf("%s image %s: accepted (%v)", kind, c.image, err)
				continue
			}
			found := false
			for _, p := range ps {
				if p.Path == "spec.image" && p.Line == 6 && p.Source == "r.yaml" && strings.Contains(p.Msg, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s image %s: want spec.image at r.yaml:6 saying %q, got %v", kind, c.image, c.want, ps)
			}
		}
		for _, img := range good {
			_, err := Parse("r.yaml", []byte(strings.Replace(body, "%s", img, 1)), nil)
			if err != nil && strings.Contains(err.Error(), "spec.image") {
				t.Errorf("%s image %s refused: %v", kind, img, err)
			}
		}
	}
	_, err := Load("qlora", []string{"image=Bad Image"})
	if err == nil || !strings.Contains(err.Error(), "--set image=Bad Image") {
		t.Errorf("--set image=Bad Image: %v", err)
	}
}

// TestArchitectures: spec.architectures takes the kubernetes.io/arch names and refuses uname's
// at their line; ain's own images get theirs by default, noted as defaulted with the source.
func TestArchitectures(t *testing.T) {
	body := "apiVersion: ain.dev/v1alpha1\nkind: MPIJob\nmetadata:\n  name: x\nspec:\n  image: %s\n  nodes: 1\n  command: [a]\n  architectures: [%s]\n"
	_, err := Parse("r.yaml", []byte(fmt.Sprintf(body, "ghcr.io/a/b:1", "x86_64")), nil)
	if err == nil || !strings.Contains(err.Error(), "spec.architectures[0]") || !strings.Contains(err.Error(), "write amd64") || !strings.Contains(err.Error(), "r.yaml:9") {
		t.Errorf("x86_64: %v", err)
	}
	r, err := Parse("r.yaml", []byte(fmt.Sprintf(body, "ghcr.io/a/b:1", "arm64, amd64")), nil)
	if err != nil || len(r.MPI.Architectures) != 2 {
		t.Fatalf("arm64, amd64: %v", err)
	}
	noArch := "apiVersion: ain.dev/v1alpha1\nkind: MPIJob\nmetadata:\n  name: x\nspec:\n  image: huggingface/trl:0.25.1\n  nodes: 1\n  command: [a]\n"
	r, err = Parse("r.yaml", []byte(noArch), nil)
	if err != nil || len(r.MPI.Architectures) != 1 || r.MPI.Architectures[0] != "amd64" {
		t.Fatalf("known image: %v %v", err, r.MPI.Architectures)
	}
	noted := false
	for _, d := range r.Defaulted {
		noted = noted || (d.Path == "spec.architectures" && strings.Contains(d.Value, "docker-build.yml"))
	}
	if !noted {
		t.Errorf("spec.architectures not noted as defaulted: %+v", r.Defaulted)
	}
	// A moving tag is a warning at its field, not an error.
	r, err = Parse("r.yaml", []byte(strings.Replace(noArch, "huggingface/trl:0.25.1", "huggingface/trl:latest", 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w.Error(), "spec.image") || !strings.Contains(w.Error(), "moving tag") {
		t.Errorf("warnings %v", w)
	}
}
