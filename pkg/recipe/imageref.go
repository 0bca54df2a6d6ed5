package recipe

import (
	"errors"
	"fmt"
	"strings"
)

// CheckImageRef is checkImageRef for an image named outside a recipe (a command's --probe-image,
// --image): nil when the kubelet would accept s as an image reference, else why not.
func CheckImageRef(s string) error { return checkImageRef(s) }

// checkImageRef is nil when s is an image reference distribution/reference's
// ParseNormalizedNamed (v0.6.0, the parser containerd and the kubelet use) accepts, else an
// error with its message, go-digest's for a bad digest. Not that package itself: it compiles
// eight regular expressions in package init (0.5 MB and 4,400 allocations in every ain process,
// issue 16), and a regular expression here would cost 150 KB on every recipe load; the grammar
// (in the header of its reference.go) is matched by hand. TestImageRefMatchesDistribution and
// FuzzImageRef compare the two.
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component [ "/" path-component ]*
//	domain    := host [ ":" port-number ]
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
	name, digest, ok := matchImageRef(full)
	if !ok {
		if _, _, ok := matchImageRef(strings.ToLower(full)); ok {
			return errors.New("repository name must be lowercase")
		}
		return errors.New("invalid reference format")
	}
	path := name
	if i := strings.IndexByte(name, '/'); i >= 0 && isImageDomain(name[:i]) && isImagePath(name[i+1:]) {
		path = name[i+1:] // the grammar's match takes the first component as the domain when it can
	}
	if len(path) > 255 {
		return errors.New("repository name must not be more than 255 characters")
	}
	if digest != "" {
		return checkDigest(digest)
	}
	return nil
}

// matchImageRef matches name [":" tag] ["@" digest]. No part holds "@"; a ":" followed by no "/"
// starts the tag (a port's ":" is followed by the rest of the name).
func matchImageRef(s string) (name, digest string, ok bool) {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s, digest = s[:i], s[i+1:]
		if !isImageDigest(digest) {
			return "", "", false
		}
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i+1:], "/") {
		var tag string
		s, tag = s[:i], s[i+1:]
		if len(tag) == 0 || len(tag) > 128 || !isWordByte(tag[0]) || strings.IndexFunc(tag, func(r rune) bool { return r > 0x7f || !isWordByte(byte(r)) && r != '.' && r != '-' }) >= 0 {
			return "", "", false
		}
	}
	if i := strings.IndexByte(s, '/'); i >= 0 && isImageDomain(s[:i]) && isImagePath(s[i+1:]) {
		return s, digest, true
	}
	return s, digest, isImagePath(s)
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isLowerAlnum(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' }

// isImageDomain: host [":" digits], host a dot-separated DNS name (components of letters,
// digits and inner hyphens) or a bracketed IPv6 address.
func isImageDomain(d string) bool {
	host, port, hasPort := d, "", false
	if strings.HasPrefix(d, "[") {
		j := strings.IndexByte(d, ']')
		if j < 2 || strings.Trim(d[1:j], "0123456789abcdefABCDEF:") != "" {
			return false
		}
		host = ""
		if rest := d[j+1:]; rest != "" {
			if rest[0] != ':' {
				return false
			}
			port, hasPort = rest[1:], true
		}
	} else {
		host, port, hasPort = strings.Cut(d, ":")
	}
	if hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return false
	}
	if host == "" {
		return strings.HasPrefix(d, "[")
	}
	for c := range strings.SplitSeq(host, ".") {
		if c == "" || c[0] == '-' || c[len(c)-1] == '-' || strings.IndexFunc(c, func(r rune) bool { return r != '-' && (r > 0x7f || !isWordByte(byte(r)) || r == '_') }) >= 0 {
			return false
		}
	}
	return true
}

// isImagePath: "/"-separated components, each runs of [a-z0-9] joined by ".", "_", "__" or
// one or more "-".
func isImagePath(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		i := 0
		for {
			j := i
			for j < len(c) && isLowerAlnum(c[j]) {
				j++
			}
			if j == i {
				return false
			}
			if j == len(c) {
				break
			}
			switch k := j + 1; c[j] {
			case '.':
				i = k
			case '_':
				if k < len(c) && c[k] == '_' {
					k++
				}
				i = k
			case '-':
				for k < len(c) && c[k] == '-' {
					k++
				}
				i = k
			default:
				return false
			}
		}
	}
	return true
}

// isImageDigest: algorithm ":" at least 32 hex digits, the algorithm letter-led alphanumeric
// components joined by one of "-_+.".
func isImageDigest(d string) bool {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) < 32 || strings.Trim(hex, "0123456789abcdefABCDEF") != "" {
		return false
	}
	start := true
	for i := 0; i < len(alg); i++ {
		c := alg[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		switch {
		case start && !letter:
			return false
		case !start && strings.IndexByte("-_+.", c) >= 0:
			start = true
			continue
		case !letter && !('0' <= c && c <= '9'):
			return false
		}
		start = false
	}
	return !start
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

// checkDigest is go-digest's Digest.Validate for a digest the grammar matched: sha256, sha384
// and sha512 want lowercase hex of their size; another algorithm is unsupported, or a bad
// format when it has capitals (go-digest's own digest grammar is lowercase).
func checkDigest(d string) error {
	alg, hex, _ := strings.Cut(d, ":")
	size := map[string]int{"sha256": 32, "sha384": 48, "sha512": 64}[alg]
	switch {
	case size == 0 && strings.ToLower(alg) != alg:
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

// MPIOperatorImagePrefix is the repository prefix of the mpi-operator's published images
// (mpioperator/base, mpioperator/openmpi, ...), normalized as imageRepository writes it.
const MPIOperatorImagePrefix = "docker.io/mpioperator/"

// imageRepository is an image reference's repository, normalized (docker.io/library/...), without
// its tag or digest.
func imageRepository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	domain, rest := splitImageDomain(name)
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i:], "/") {
		rest = rest[:i]
	}
	return domain + "/" + rest
}
