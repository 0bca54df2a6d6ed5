package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// newCRILog is a criLog at 0.log in a test's folder, and that path.
func newCRILog(t *testing.T) (*criLog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	c, err := createCRILog(path)
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

// TestCRILogAppends: lines split across writes come out as one record each, a line past 16 KiB
// as P records then its F one, a last line without its newline as an F record at close, and
// every add only appends (what a reader read stays as it was).
func TestCRILogAppends(t *testing.T) {
	c, path := newCRILog(t)
	now := time.Date(2026, 12, 6, 17, 0, 0, 5, time.UTC)
	long := strings.Repeat("y", criMaxLine+100)
	var prev string
	for _, w := range []string{"first\npar", "t-", "one\n", "", long[:9000], long[9000:] + "\n", "no newline"} {
		if err := c.add([]byte(w), now, false); err != nil {
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
	if err := c.add([]byte("late\n"), now, false); err == nil {
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

// TestCRILogRecreates: a new run makes a new file at the path (a reader of the old one keeps
// it whole; a follower reopens the path on the rename's Create event).
func TestCRILogRecreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte("old run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path) // a reader of the old run's log
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	c, err := createCRILog(path)
	if err != nil {
		t.Fatalf("a new run: %v", err)
	}
	if err := c.close(time.Now()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("the new run's file has %q", b)
	}
	b := make([]byte, 64)
	if n, _ := old.Read(b); string(b[:n]) != "old run\n" {
		t.Errorf("the old run's file, open before, now reads %q", b[:n])
	}
}

// TestCRILogCutAndRotate: output lost between two adds ends the waiting line there; past
// criMaxFile the full file becomes <path>.1 and the records go on in a new one.
func TestCRILogCutAndRotate(t *testing.T) {
	c, path := newCRILog(t)
	now := time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)
	ts := "2026-12-06T17:00:00.000000000Z"
	if err := c.add([]byte("before the ga"), now, false); err != nil {
		t.Fatal(err)
	}
	if err := c.add([]byte("after it\n"), now, true); err != nil {
		t.Fatal(err)
	}
	want := ts + " stdout F before the ga\n" + ts + " stdout F after it\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("after a cut: %q, want %q", b, want)
	}
	line := strings.Repeat("z", 1000) + "\n"
	for range criMaxFile / 1000 {
		if err := c.add([]byte(line), now, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.close(now); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) > criMaxFile || !strings.HasPrefix(string(full), want) || len(cur) == 0 || len(cur) >= len(full) {
		t.Errorf("rotated file %d bytes (max %d), current %d bytes", len(full), criMaxFile, len(cur))
	}
	record := ts + " stdout F " + line
	if got := (len(full) - len(want) + len(cur)) / len(record); got != criMaxFile/1000 || !strings.HasPrefix(string(cur), record) {
		t.Errorf("%d records of the long line in the two files, want %d", got, criMaxFile/1000)
	}
}

// TestCRILogRotateFails: a rotation that cannot be made (<path>.1 a folder that cannot be
// removed) keeps writing to the full file: no output lost, the path always there.
func TestCRILogRotateFails(t *testing.T) {
	c, path := newCRILog(t)
	if err := os.MkdirAll(filepath.Join(path+".1", "busy"), 0o755); err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("w", 1000) + "\n"
	n := criMaxFile/1000 + 10
	for range n {
		if err := c.add([]byte(line), time.Now(), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.close(time.Now()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), line); got != n {
		t.Errorf("%d lines in the file, want all %d", got, n)
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Errorf("the failed rotation's new file is left: %v", err)
	}
}
