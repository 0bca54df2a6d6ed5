package vllm

import (
	"fmt"
	"strconv"
	"strings"
)

// Advisory is a published vLLM security advisory: versions in [Introduced, Fixed) are affected.
type Advisory struct {
	ID, CVE    string
	Introduced string // "" when every release before Fixed is affected
	Fixed      string
	Summary    string
}

// Advisories is what ain knows of vLLM's published advisories, the one place to update (newest
// fix first). Ranges are the GitHub advisories' (https://github.com/vllm-project/vllm/security/advisories,
// mirrored by osv.dev/vulnerability/<ID>), read 2026-12-04. GHSA-94f4-hr76-p5j6 was published
// with no upper bound; its fix (vllm PR #43426, the auth middleware reads scope["path"]) first
// shipped in v0.22.0. GHSA-3c86-2m5g-59q7 (< 0.28.0) is the newest fix found.
var Advisories = []Advisory{
	{ID: "GHSA-3c86-2m5g-59q7", Fixed: "0.28.0", Summary: "RCE from a malicious model despite trust_remote_code=False (LlavaOnevision2 processor)"},
	{ID: "GHSA-rwxx-mrjm-wc2m", CVE: "CVE-2026-55574", Fixed: "0.24.0", Summary: "ReDoS via structured_outputs.regex"},
	{ID: "GHSA-8wr5-jm2h-8r4f", CVE: "CVE-2026-54234", Introduced: "0.17.1", Fixed: "0.24.0", Summary: "remote DoS via invalid recovered token reinjection"},
	{ID: "GHSA-33cg-gxv8-3p8g", CVE: "CVE-2026-55514", Introduced: "0.12.0", Fixed: "0.24.0", Summary: "DoS via prompt embeds on M-RoPE models"},
	{ID: "GHSA-94f4-hr76-p5j6", CVE: "CVE-2026-48746", Introduced: "0.3.0", Fixed: "0.22.0", Summary: "OpenAI API key check bypassed with a crafted Host header"},
	{ID: "GHSA-q8gq-377p-jq3r", CVE: "CVE-2026-41523", Fixed: "0.22.0", Summary: "code execution: a security check done by assert in activation function loading"},
	{ID: "GHSA-7972-pg2x-xr59", CVE: "CVE-2026-27893", Introduced: "0.10.1", Fixed: "0.18.0", Summary: "RCE: hardcoded trust_remote_code override in model files"},
	{ID: "GHSA-4r2x-xpjr-7cvv", CVE: "CVE-2026-22778", Introduced: "0.8.3", Fixed: "0.14.1", Summary: "unauthenticated RCE in video processing (multimodal path)"},
	{ID: "GHSA-2pc9-4j83-qjmr", CVE: "CVE-2026-22807", Introduced: "0.10.1", Fixed: "0.14.0", Summary: "RCE via auto_map dynamic module loading"},
}

// ImageCheck is what ain can tell about a serving image's vLLM version.
type ImageCheck struct {
	Image string
	// Version is the vLLM version read from the image's tag, "" when the tag is no version.
	Version string
	// Affected are the advisories whose range holds Version.
	Affected []Advisory
	// MinSafe is the newest fixed version among Advisories: older versions are warned about.
	MinSafe string
}

// CheckImage reads the vLLM version from an image tag (vllm/vllm-openai:v0.30.0 → 0.30.0; a
// suffix such as -cu130 is ignored) and lists the advisories that version is affected by. A
// tag that is no version (latest, nightly, a digest) leaves Version empty: ain cannot tell.
func CheckImage(image string) ImageCheck {
	c := ImageCheck{Image: image}
	for _, a := range Advisories {
		if c.MinSafe == "" || compareVersions(a.Fixed, c.MinSafe) > 0 {
			c.MinSafe = a.Fixed
		}
	}
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i] // a digest names bytes, not a version
	}
	tag := ""
	if i := strings.LastIndexByte(ref, ':'); i >= 0 && !strings.Contains(ref[i+1:], "/") {
		tag = ref[i+1:]
	}
	v := strings.TrimPrefix(tag, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	if _, ok := parseVersion(v); !ok {
		return c
	}
	c.Version = v
	for _, a := range Advisories {
		if compareVersions(v, a.Fixed) < 0 && (a.Introduced == "" || compareVersions(v, a.Introduced) >= 0) {
			c.Affected = append(c.Affected, a)
		}
	}
	return c
}

// Warning is the line to print, "" when the version is known and past every advisory.
func (c ImageCheck) Warning() string {
	switch {
	case c.Version == "":
		return fmt.Sprintf("image %s: its tag is no vLLM version, so ain cannot tell whether it is older than %s, the newest release that fixes a published advisory; pin a release tag (vllm/vllm-openai:v%s or newer)", c.Image, c.MinSafe, c.MinSafe)
	case compareVersions(c.Version, c.MinSafe) >= 0:
		return ""
	}
	ids := make([]string, len(c.Affected))
	for i, a := range c.Affected {
		ids[i] = a.ID
		if a.CVE != "" {
			ids[i] += " (" + a.CVE + ": " + a.Summary + ")"
		} else {
			ids[i] += " (" + a.Summary + ")"
		}
	}
	msg := fmt.Sprintf("image %s is vLLM %s, older than %s, the newest release that fixes a published advisory", c.Image, c.Version, c.MinSafe)
	if len(ids) > 0 {
		msg += "; it is affected by " + strings.Join(ids, ", ")
	}
	return msg + fmt.Sprintf("; use vllm/vllm-openai:v%s or newer", c.MinSafe)
}

// parseVersion reads MAJOR.MINOR[.PATCH[.postN]] into numbers (a post release counts as a
// fourth component).
func parseVersion(s string) ([4]int, bool) {
	var out [4]int
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return out, false
	}
	for i, p := range parts {
		if i == 3 {
			p = strings.TrimPrefix(p, "post")
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// compareVersions orders two versions parseVersion accepts (an unparsable one sorts first).
func compareVersions(a, b string) int {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	for i := range va {
		if va[i] != vb[i] {
			if va[i] < vb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Line is Warning as printed: a note when the tag tells no version, else a WARNING; "" for none.
func (c ImageCheck) Line() string {
	switch w := c.Warning(); {
	case w == "":
		return ""
	case c.Version == "":
		return "note: " + w
	default:
		return "WARNING: " + w
	}
}
