package recipe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ain-hpc/ain/internal/lazyre"
)

// The container image reference grammar of distribution/reference (the parser containerd and the
// kubelet use; grammar in the header of its reference.go, v0.6.0), with the checks and messages
// of its ParseNormalizedNamed and of go-digest's digest validation. Not that package itself: it
// compiles eight regular expressions in package init (0.5 MB and 4,400 allocations in every
// ain process, issue 16); these are compiled on the first image checked. FuzzImageRef compares
// the two on every input.
const (
	refAlphanumeric    = `[a-z0-9]+`
	refSeparator       = `(?:[._]|__|[-]+)`
	refDomainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refHost            = `(?:` + refDomainComponent + `(?:\.` + refDomainComponent + `)*` + `|\[(?:[a-fA-F0-9:]+)\])`
	refDomain          = refHost + `(?::[0-9]+)?`
	refPathComponent   = refAlphanumeric + `(?:` + refSeparator + refAlphanumeric + `)*`
	refRemoteName      = refPathComponent + `(?:/` + refPathComponent + `)*`
	refName            = `(?:` + refDomain + `/)?` + refRemoteName
	refTag             = `[\w][\w.-]{0,127}`
	refDigest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	refNameMax         = 255
)

var (
	// name [":" tag] ["@" digest], each captured.
	refRE = lazyre.New(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	// the name split into domain and path, as the grammar's leftmost-first match splits it.
	refNameRE = lazyre.New(`^(?:(` + refDomain + `)/)?(` + refRemoteName + `)$`)
	// go-digest's digest form, checked when the algorithm is not one it knows.
	refAnyDigestRE = lazyre.New(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
)

// checkImageRef is nil when s is an image reference distribution/reference's
// ParseNormalizedNamed accepts, else an error with its message.
func checkImageRef(s string) error {
	if len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" {
		return fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s)
	}
	domain, rest := splitImageDomain(s)
	remote, _, _ := strings.Cut(rest, ":")
	if strings.ToLower(remote) != remote {
		return fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", remote)
	}
	full := domain + "/" + rest
	m := refRE().FindStringSubmatch(full)
	if m == nil {
		if refRE().MatchString(strings.ToLower(full)) {
			return errors.New("repository name must be lowercase")
		}
		return errors.New("invalid reference format")
	}
	path := m[1]
	if n := refNameRE().FindStringSubmatch(m[1]); len(n) == 3 {
		path = n[2]
	}
	if len(path) > refNameMax {
		return fmt.Errorf("repository name must not be more than %d characters", refNameMax)
	}
	if m[3] != "" {
		return checkDigest(m[3])
	}
	return nil
}

// splitImageDomain splits a familiar name into its registry and the rest, Docker Hub's
// ("docker.io", with "library/" before one-component names) when the first component cannot be
// a registry (no "." or ":", not "localhost", lowercase).
func splitImageDomain(name string) (domain, rest string) {
	first, after, ok := strings.Cut(name, "/")
	switch {
	case !ok:
		return "docker.io", "library/" + name
	case first == "localhost":
		domain, rest = first, after
	case first == "index.docker.io":
		domain, rest = "docker.io", after
	case strings.ContainsAny(first, ".:"), strings.ToLower(first) != first:
		domain, rest = first, after
	default:
		domain, rest = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain, rest
}

// checkDigest is go-digest's Digest.Validate for the algorithms it knows (sha256, sha384,
// sha512: lowercase hex of the hash's size).
func checkDigest(d string) error {
	alg, hex, _ := strings.Cut(d, ":")
	size := map[string]int{"sha256": 32, "sha384": 48, "sha512": 64}[alg]
	switch {
	case alg == "" || hex == "":
		return errors.New("invalid checksum digest format")
	case size == 0 && !refAnyDigestRE().MatchString(d):
		return errors.New("invalid checksum digest format")
	case size == 0:
		return errors.New("unsupported digest algorithm")
	case len(hex) != 2*size:
		return errors.New("invalid checksum digest length")
	case strings.Trim(hex, "0123456789abcdef") != "":
		return errors.New("invalid checksum digest format")
	}
	return nil
}
