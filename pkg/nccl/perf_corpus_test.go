package nccl

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// corpusDir is the shared corpus of real-world samples (cut byte-exact from public repositories;
// each file's source is in its INDEX.md). It lives outside the repository and is read in place.
const corpusDir = "../../../shared/corpus"

// corpusEntry is one row of a table in corpus/INDEX.md.
type corpusEntry struct {
	Path, Source, Expected string
}

// readCorpusIndex returns the rows of INDEX.md's tables whose path starts with section+"/".
func readCorpusIndex(t *testing.T, section string) []corpusEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "INDEX.md"))
	if err != nil {
		t.Skipf("shared corpus not available: %v", err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 6 {
			continue
		}
		p := strings.TrimSpace(cells[1])
		if !strings.HasPrefix(p, section+"/") {
			continue
		}
		out = append(out, corpusEntry{Path: p, Source: strings.TrimSpace(cells[2]), Expected: strings.TrimSpace(cells[len(cells)-2])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every file of the section must be in the index, so that none goes untested.
	files, _ := filepath.Glob(filepath.Join(corpusDir, section, "*"))
	listed := map[string]bool{}
	for _, e := range out {
		listed[e.Path] = true
	}
	for _, fp := range files {
		rel := section + "/" + filepath.Base(fp)
		if !listed[rel] {
			t.Errorf("%s is not described in INDEX.md", rel)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s entries in INDEX.md", section)
	}
	return out
}

var (
	reCorpusMax   = regexp.MustCompile(`max busbw ([0-9.]+)`)
	reCorpusAvg   = regexp.MustCompile("avg `([0-9.]+)`")
	reCorpusOOB   = regexp.MustCompile(`OOB (\d+)`)
	reCorpusRanks = regexp.MustCompile(`nranks (\d+)`)
)

// TestPerfCorpus checks every nccl-tests sample of the shared corpus against INDEX.md's reading:
// collective, nranks (or "not printed"), max busbw, avg busbw exactly as printed, out-of-bounds.
func TestPerfCorpus(t *testing.T) {
	for _, e := range readCorpusIndex(t, "nccl-tests") {
		t.Run(filepath.Base(e.Path), func(t *testing.T) {
			runs := parsePerfFile(t, filepath.Join(corpusDir, e.Path))
			if len(runs) != 1 {
				t.Fatalf("got %d runs, want 1", len(runs))
			}
			r := runs[0]
			wantColl := strings.TrimSpace(strings.SplitN(e.Expected, ";", 2)[0]) + "_perf"
			if r.Collective != wantColl {
				t.Errorf("collective = %q, want %q (source %s)", r.Collective, wantColl, e.Source)
			}
			if m := reCorpusRanks.FindStringSubmatch(e.Expected); m != nil {
				want, _ := strconv.Atoi(m[1])
				if r.NRanks == nil || *r.NRanks != want {
					t.Errorf("nranks = %v, want %d", ptrStr(r.NRanks), want)
				}
			} else if strings.Contains(e.Expected, "nranks not printed") && r.NRanks != nil {
				t.Errorf("nranks = %d, want null (not printed)", *r.NRanks)
			}
			if m := reCorpusMax.FindStringSubmatch(e.Expected); m != nil {
				want, _ := strconv.ParseFloat(m[1], 64)
				if r.MaxBusbw == nil || *r.MaxBusbw != want {
					t.Errorf("maxBusbw = %v, want %v", ptrStr(r.MaxBusbw), want)
				}
			} else {
				t.Errorf("INDEX.md gives no max busbw for %s", e.Path)
			}
			if m := reCorpusAvg.FindStringSubmatch(e.Expected); m != nil {
				if r.AvgBusbw == nil || string(*r.AvgBusbw) != m[1] {
					t.Errorf("avgBusbw = %v, want %s exactly", ptrStr(r.AvgBusbw), m[1])
				}
			}
			if m := reCorpusOOB.FindStringSubmatch(e.Expected); m != nil {
				want, _ := strconv.ParseInt(m[1], 10, 64)
				if r.OutOfBounds == nil || *r.OutOfBounds != want {
					t.Errorf("outOfBounds = %v, want %d", ptrStr(r.OutOfBounds), want)
				}
			}
			if strings.Contains(e.Path, "elided") && !r.Elided {
				t.Errorf("elided rows not reported")
			}
			for i, row := range r.Rows {
				if row.OOP == nil || row.IP == nil {
					t.Errorf("row %d (size %d) lacks a half: %+v", i, row.Size, row)
				}
			}
		})
	}
}

func ptrStr[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return strings.TrimSpace(strings.Trim(strconv.Quote(toString(*p)), `"`))
}

func toString(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	}
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return "?"
}
