// Package image says what ain knows of a container image from its reference: whether the
// reference pins the image's content or names a tag its publisher can move, and, for the images
// ain names by default, which CPU architectures they were built for, read from their build files.
//
// References are parsed by github.com/distribution/reference, the parser containerd and the
// kubelet use, so ain accepts and normalizes exactly what a node will pull.
package image

import (
	"fmt"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
)

// Check is nil when the kubelet would accept ref as an image reference, else the parser's reason.
func Check(ref string) error {
	_, err := reference.ParseNormalizedNamed(ref)
	return err
}

// Repository is ref's repository, normalized (docker.io/library/ubuntu for ubuntu:22.04), without
// its tag or digest; "" when ref does not parse.
func Repository(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ""
	}
	return n.Name()
}

// Pin is how firmly a reference names an image's content.
type Pin int

const (
	// Digest: @sha256:... names the content itself; the registry cannot serve anything else.
	Digest Pin = iota
	// VersionTag: a tag that names a release (v0.30.0, 0.25.1, 12.4.1-...-85f9143). Many
	// publishers never move these, but a registry lets them, and some do (huggingface/trl's
	// workflow re-pushes the PyPI version's tag on every commit to main): only a digest is
	// immutable.
	VersionTag
	// MovingTag: no tag (":latest" implied), or a tag that names a channel (latest, main,
	// nightly, ...): each pull may get another image, so two ranks of one job can run different
	// code, and a result cannot be reproduced.
	MovingTag
)

func (p Pin) String() string {
	return [...]string{"digest", "version tag", "moving tag"}[p]
}

// movingTags are tags that name a channel, not a release.
var movingTags = []string{"latest", "main", "master", "nightly", "dev", "edge", "stable", "head", "develop", "rolling"}

// PinOf says how ref pins its image.
func PinOf(ref string) (Pin, error) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return MovingTag, err
	}
	if _, ok := n.(reference.Digested); ok {
		return Digest, nil
	}
	t, ok := n.(reference.Tagged)
	if !ok || slices.Contains(movingTags, strings.ToLower(t.Tag())) {
		return MovingTag, nil
	}
	return VersionTag, nil
}

// MovingWarning is a warning for a reference that can change under the user, "" for a digest or
// a version tag (or a reference that does not parse: validation reports that).
func MovingWarning(ref string) string {
	p, err := PinOf(ref)
	if err != nil || p != MovingTag {
		return ""
	}
	return fmt.Sprintf("image %s names no release (a moving tag): every pull may get another image, so ranks or replicas can run different code and the result cannot be reproduced; pin a version tag or a digest (docker buildx imagetools inspect %s prints it)", ref, ref)
}

// Facts is what ain knows of one image it names by default.
type Facts struct {
	// Ref is the reference as ain writes it (exact match after normalization).
	Ref string
	// Arches are the GOARCH names of the platforms the image is built for.
	Arches []string
	// Source says where the architectures were read.
	Source string
	// NeedsGPUDriver: the image's programs link the NVIDIA driver's libcuda.so.1, which only the
	// GPU runtime mounts into a container that holds a GPU; without one they do not start.
	NeedsGPUDriver bool
}

// known holds the images ain's built-in recipes and commands name. An image is listed only where
// its build files say which platforms it has; for any other image ain knows nothing and
// constrains nothing.
var known = []Facts{
	{
		// The allreduce recipe's and `bench rdma`'s image. Built by coreweave/nccl-tests at commit
		// 85f9143 (the tag's suffix): .github/workflows/build.yml there runs
		// docker/build-push-action@v3.2.0 without `platforms:`, so the builder's own platform
		// only (later commits add linux/arm64 as base-${TARGETARCH}); Dockerfile.ubuntu22 builds
		// coreweave/perftest 5b47ede with CUDA_H_PATH (ib_write_bw --use_cuda) and nccl-tests.
		Ref:    "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu22.04-nccl2.21.5-1-85f9143",
		Arches: []string{"amd64"},
		Source: "coreweave/nccl-tests@85f9143 .github/workflows/build.yml builds without platforms:",
		// coreweave/perftest 5b47ede configure.ac: with CUDA_H_PATH every program links -lcuda,
		// and the image has only CUDA's stub libcuda.so, not libcuda.so.1.
		NeedsGPUDriver: true,
	},
	{
		// The qlora recipes' image: huggingface/trl .github/workflows/docker-build.yml builds
		// docker/trl with docker/build-push-action and no `platforms:`, on an x86-64 runner group.
		Ref:    "huggingface/trl:0.25.1",
		Arches: []string{"amd64"},
		Source: "huggingface/trl .github/workflows/docker-build.yml builds without platforms:",
	},
}

// Known returns what ain knows of ref, if anything.
func Known(ref string) (Facts, bool) {
	name, tag := nameTag(ref)
	if tag == "" {
		return Facts{}, false
	}
	for _, f := range known {
		if n, t := nameTag(f.Ref); n == name && t == tag {
			return f, true
		}
	}
	return Facts{}, false
}

// nameTag is ref's normalized repository and tag; a digest beside the tag does not change which
// build the tag names.
func nameTag(ref string) (name, tag string) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", ""
	}
	if t, ok := n.(reference.Tagged); ok {
		tag = t.Tag()
	}
	return n.Name(), tag
}

// Arches lists the known architectures of ref, nil when ain does not know them.
func Arches(ref string) []string {
	if f, ok := Known(ref); ok {
		return slices.Clone(f.Arches)
	}
	return nil
}

// ValidArches are the kubernetes.io/arch values (GOARCH names) a node reports.
var ValidArches = []string{"amd64", "arm64", "ppc64le", "s390x", "riscv64"}

// RequireArches holds a pod to nodes of the image's architectures (kubernetes.io/arch), as a
// required node affinity term ANDed into every term already there; none when arches is empty.
// A nodeSelector that already names another architecture is an error: no node could run it.
func RequireArches(spec *corev1.PodSpec, arches []string) error {
	if len(arches) == 0 {
		return nil
	}
	if a, ok := spec.NodeSelector[corev1.LabelArchStable]; ok && !slices.Contains(arches, a) {
		return fmt.Errorf("spec.architectures: the image is built for %s, but the profile's nodeSelector asks for %s=%s: no node can run it; use an image built for %s, or set spec.architectures if the image has more", strings.Join(arches, ","), corev1.LabelArchStable, a, a)
	}
	req := corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(arches)}
	terms := RequiredNodeSelector(spec).NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
	}
	return nil
}

// RequiredNodeSelector is spec's required node affinity, created (with one empty term, which
// matches every node) where spec has none, so that callers can AND requirements into each term.
func RequiredNodeSelector(spec *corev1.PodSpec) *corev1.NodeSelector {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	return na.RequiredDuringSchedulingIgnoredDuringExecution
}
