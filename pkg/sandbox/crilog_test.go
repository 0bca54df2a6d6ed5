package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCRILogAppends: lines split across writes come out as one record each, a line past 16 KiB
// as P records then its F one, a last line without its newline as an F record at close, and
// every add only appends (what a reader read stays as it was).
func TestCRILogAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	c, err := createCRILog(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 17, 0, 0, 5, time.UTC)
	long := strings.Repeat("y", criMaxLine+100)
	var prev string
	for _, w := range []string{"first\npar", "t-", "one\n", "", long[:9000], long[9000:] + "\n", "no newline"} {
		if err := c.add([]byte(w), now); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if !strings.HasPrefix(string(b), prev) {
			t.Fatalf("after writing %.20q the file no longer starts with what it had", w)
		}
		prev = string(b)
	}
	if err := c.close(now); err != nil {
		t.Fatal(err)
	}
	if err := c.add([]byte("late\n"), now); err == nil {
		t.Error("add after close took")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-12-06T17:00:00.000000005Z"
	want := ts + " stdout F first\n" + ts + " stdout F part-one\n" +
		ts + " stdout P " + long[:criMaxLine] + "\n" + ts + " stdout F " + long[criMaxLine:] + "\n" +
		ts + " stdout F no newline\n"
	if string(b) != want {
		t.Errorf("the file:\n%.300q\nwant:\n%.300q", b, want)
	}
}

// TestCRILogRecreates: a new run of the container empties the file.
func TestCRILogRecreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte("old run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := createCRILog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.close(time.Now()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("the new run's file has %q", b)
	}
}
