package nccl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func analyzeBoth(t *testing.T, name string, data []byte) (cached, parsed []byte, hits, known int64) {
	t.Helper()
	run := func(off bool) ([]byte, int64) {
		a := NewLogAnalyzer()
		a.rc.off = off
		if err := a.Feed(name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(a.Report())
		if err != nil {
			t.Fatal(err)
		}
		known = a.rc.known
		return b, a.rc.hits
	}
	parsed, _ = run(true)
	cached, hits = run(false)
	return cached, parsed, hits, known
}

// TestRepeatCacheExact: the repeat cache changes nothing in any report: every sample log, the
// shared corpus and the synthetic benchmark log give byte-identical JSON with the cache on and off,
// and the cache is actually used on the long log.
func TestRepeatCacheExact(t *testing.T) {
	var files []string
	for _, g := range []string{"testdata/logs/*.log", "testdata/logs/old/*.log", filepath.Join(corpusDir, "nccl-log", "*")} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Each sample twice, so every line is also seen as a repeat.
		data := append(append([]byte{}, b...), b...)
		c, p, _, _ := analyzeBoth(t, "", data)
		if !bytes.Equal(c, p) {
			t.Errorf("%s: the cache changes the report:\n%s\nvs\n%s", f, c, p)
		}
	}
	var buf bytes.Buffer
	if err := writeSyntheticLog(&buf, 4<<20); err != nil {
		t.Fatal(err)
	}
	c, p, hits, known := analyzeBoth(t, "", buf.Bytes())
	if !bytes.Equal(c, p) {
		t.Errorf("synthetic log: the cache changes the report")
	}
	// Repeats are marked known by the splitter's workers in the blocks they split after the
	// analyser has seen them (on 4 MiB, a quarter of the hits; most of them on a long log).
	if hits < 10000 || known < 1000 {
		t.Errorf("only %d cache hits, %d of them known, on the synthetic log", hits, known)
	}
	// Evidence fills up across repeats: the first three channel lines of a kind are evidence even
	// when identical, the fourth and later are counted only.
	line := "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
	c, p, _, _ = analyzeBoth(t, "", []byte(strings.Repeat(line, 6)+"h:1:2 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n"))
	if !bytes.Equal(c, p) || !bytes.Contains(c, []byte(`"line":3,`)) || bytes.Contains(c, []byte(`"line":4,`)) {
		t.Errorf("evidence across repeats:\n%s\nvs\n%s", c, p)
	}
}
