package recipe

import (
	// go-digest accepts sha384 and sha512 only when crypto/sha512 is linked, as it is in the ain
	// binary (TLS): link it here too, so the comparison is the one the binary made.
	_ "crypto/sha512"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// imageRefCases are references real recipes use and the ways they go wrong, each branch of the
// grammar and of the digest check.
var imageRefCases = []string{
	"ubuntu", "ubuntu:22.04", "nvcr.io/nvidia/pytorch:24.05-py3", "vllm/vllm-openai:v0.6.3", "localhost:5000/x/y",
	"localhost/x", "Registry.Example.com/a/b:1", "index.docker.io/library/ubuntu", "docker.io/ubuntu", "[::1]:5000/a/b",
	"192.168.1.10:5000/team/img:tag", "a__b/c--d/e.f:1", "ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32),
	"ghcr.io/a/b:1@sha256:" + strings.Repeat("ab", 32), "a@sha512:" + strings.Repeat("0f", 64), "a@sha384:" + strings.Repeat("0f", 48),
	"a@sha256:" + strings.Repeat("ab", 16), "a@sha256:" + strings.Repeat("AB", 32), "a@md5:" + strings.Repeat("ab", 16),
	"a@sha256+b64:" + strings.Repeat("ab", 32), "a@Sha256:" + strings.Repeat("ab", 32), strings.Repeat("ab", 32),
	strings.Repeat("AB", 32), "UPPER/Case:tag", "Upper:tag", "a/B", "pytorch:", "a//b", "img@sha256:zz", "a b", "", ":", "@",
	"nvcr.io/nvidia/pytorch :24.05", "-a", "a-", "a.", "a..b", "a___b", "x/" + strings.Repeat("a", 255), "x/" + strings.Repeat("a", 260),
	strings.Repeat("a", 256), "a:" + strings.Repeat("t", 128), "a:" + strings.Repeat("t", 129), "a:.t", "a:t!", "[::1/a", "ex-.com/a",
	"-ex.com/a", "ex.com:/a", "[::1]/a", "[]:5000/a", "[::1]x/a", "a:5000", "ex.com:5000", "a/b:c/d", "ex_ample.com/a", "EX.com:1/a_b",
	"a@sha256:" + strings.Repeat("ab", 32) + "@x", "a@Foo+bar:" + strings.Repeat("ab", 16), "a@foo+bar:" + strings.Repeat("ab", 16), "a@f-:" + strings.Repeat("ab", 16), "ex.com:99/a:t@sha256:" + strings.Repeat("ab", 32), "éa", "a/é",
}

// distributionMessage is what ain reported before checkImageRef: distribution/reference's
// ParseNormalizedNamed error, "" when it accepts.
func distributionMessage(s string) string {
	if _, err := reference.ParseNormalizedNamed(s); err != nil {
		return err.Error()
	}
	return ""
}

func ownMessage(s string) string {
	if err := checkImageRef(s); err != nil {
		return err.Error()
	}
	return ""
}

// TestImageRefMatchesDistribution: checkImageRef accepts what distribution/reference accepts
// and refuses the rest with the same message.
func TestImageRefMatchesDistribution(t *testing.T) {
	accepted := 0
	for _, s := range imageRefCases {
		want, got := distributionMessage(s), ownMessage(s)
		if got != want {
			t.Errorf("%q: %q, distribution/reference %q", s, got, want)
		}
		if want == "" {
			accepted++
		}
	}
	if accepted < 10 || accepted == len(imageRefCases) {
		t.Errorf("%d of %d cases accepted: the table should hold both kinds", accepted, len(imageRefCases))
	}
}

// FuzzImageRef: on any input checkImageRef and distribution/reference agree (accept, or the same
// message).
func FuzzImageRef(f *testing.F) {
	for _, s := range imageRefCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := distributionMessage(s), ownMessage(s); got != want {
			t.Errorf("%q: %q, distribution/reference %q", s, got, want)
		}
	})
}
