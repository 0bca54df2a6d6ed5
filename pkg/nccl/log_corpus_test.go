package nccl

import (
	"path/filepath"
	"regexp"
	"testing"
)

var (
	reCorpusTransport = regexp.MustCompile(`transport=([a-z:-]+)`)
	reCorpusGDR       = regexp.MustCompile(`gdr=(true|false|unknown)`)
)

// TestLogCorpus checks every NCCL log of the shared corpus against INDEX.md's transport and gdr.
func TestLogCorpus(t *testing.T) {
	for _, e := range readCorpusIndex(t, "nccl-log") {
		t.Run(filepath.Base(e.Path), func(t *testing.T) {
			r := analyzeFile(t, filepath.Join(corpusDir, e.Path))
			m := reCorpusTransport.FindStringSubmatch(e.Expected)
			if m == nil {
				t.Fatalf("INDEX.md gives no transport for %s", e.Path)
			}
			if r.Transport != m[1] {
				t.Errorf("transport = %q, want %q (source %s)", r.Transport, m[1], e.Source)
			}
			if g := reCorpusGDR.FindStringSubmatch(e.Expected); g != nil {
				got := "unknown"
				if r.GDR != nil && *r.GDR {
					got = "true"
				} else if r.GDR != nil {
					got = "false"
				}
				if got != g[1] {
					t.Errorf("gdr = %s, want %s", got, g[1])
				}
			}
			if len(r.Evidence) == 0 {
				t.Errorf("no evidence lines")
			}
		})
	}
}
