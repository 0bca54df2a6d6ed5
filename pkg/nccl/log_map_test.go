package nccl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ain-hpc/ain/pkg/input"
)

// TestMappedFileReportsAsRead: a log read by mapping its file gives the report of the same bytes
// read through Read, on the synthetic logs of both shapes and the sample logs one after another
// (lines crossing windows, a last line without '\n'), with default blocks and small ones (many
// windows, not page-aligned), and leaves the file's offset at its end.
func TestMappedFileReportsAsRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on unix; checked on linux")
	}
	var data bytes.Buffer
	for _, shape := range []string{shapeColl, shapeTuning} {
		if err := writeSyntheticLogShape(&data, 3<<20, shape); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "logs", "*.log"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data.Write(b)
	}
	data.WriteString("h:1:1 [0] NCCL INFO no newline at the end")
	path := filepath.Join(t.TempDir(), "nccl.log")
	if err := os.WriteFile(path, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	report := func(r io.Reader, read int, mapMin int64) []byte {
		a := NewLogAnalyzer()
		a.splitRead, a.mapMin = read, mapMin
		if err := a.Feed("nccl.log", r); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(a.Report())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, read := range []int{0, 5000} {
		want := report(bytes.NewReader(data.Bytes()), read, 0)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if mappable(f, 0) == nil {
			t.Fatal("a regular file not mapped")
		}
		got := report(f, read, 0)
		if off, _ := f.Seek(0, io.SeekCurrent); off != int64(data.Len()) {
			t.Errorf("read=%d: the file's offset is %d after the read, want its size %d", read, off, data.Len())
		}
		f.Close()
		if !bytes.Equal(got, want) {
			t.Errorf("read=%d: the mapped file's report differs:\n%.2000s\nread:\n%.2000s", read, got, want)
		}
	}
}

// TestMappedFileShrank: a file that got shorter than its size when the read began (logrotate's
// copytruncate) is input.ErrShrank, named, not a crash on SIGBUS.
func TestMappedFileShrank(t *testing.T) {
	f, src := openMapped(t, collLogFile(t, 2<<20))
	src.size += 4 << 20 // its size at the start; the last 4 MiB are gone since
	a := NewLogAnalyzer()
	a.splitRead = 64 << 10
	err := a.feed("rank0.log", f, src)
	if !errors.Is(err, input.ErrShrank) || err.Error() != "reading rank0.log: "+input.ErrShrank.Error() {
		t.Fatalf("Feed: %v, want input.ErrShrank named", err)
	}
}

// TestMappedFileCutPastRead: a file cut after the read began, but not below what was read, ends
// at its new end without an error, as a Read meets it (the bytes it lost were never read).
func TestMappedFileCutPastRead(t *testing.T) {
	path := collLogFile(t, 3<<20)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const read = 64 << 10
	if len(data)%read > read-100 {
		t.Fatalf("the log's last block is too full for the test: %d bytes", len(data)%read)
	}
	f, src := openMapped(t, path)
	src.size += 50 // inside the last block: its window comes up short and the size is taken again
	linesAsRead(t, f, src, read, data)
}

// linesAsRead feeds f mapped by src in blocks of read bytes, and checks that it counts the lines
// and NCCL lines of data read through Read.
func linesAsRead(t *testing.T, f *os.File, src *mapSource, read int, data []byte) {
	t.Helper()
	a, b := NewLogAnalyzer(), NewLogAnalyzer()
	a.splitRead = read
	if err := a.feed("rank0.log", f, src); err != nil {
		t.Fatal(err)
	}
	if err := b.Feed("rank0.log", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if a.lines != b.lines || a.ncclLines != b.ncclLines {
		t.Errorf("mapped: %d lines (%d NCCL), read: %d (%d)", a.lines, a.ncclLines, b.lines, b.ncclLines)
	}
}

// TestMappedFileGrew: a log that grew after the read began (a live one) is read to its new end,
// as a Read goes on to it, and its offset is left there.
func TestMappedFileGrew(t *testing.T) {
	path := collLogFile(t, 3<<20)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, src := openMapped(t, path)
	src.size -= 1<<20 + 5 // its size when the read began; the rest came since
	linesAsRead(t, f, src, 0, data)
	if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(data)) {
		t.Errorf("offset %d after the read, want the new end %d", off, len(data))
	}
}

// TestMappedFileInterrupted: input.Open's reader of a regular file is mapped, and an interrupt
// (its context done) ends the read with the context's error, as its Read would.
func TestMappedFileInterrupted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on unix; checked on linux")
	}
	path := collLogFile(t, 2<<20)
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := input.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if mappable(rc, mapMin) == nil {
		t.Fatal("input.Open's reader of a 2 MiB file is not mapped")
	}
	cancel()
	if err := NewLogAnalyzer().Feed("nccl.log", rc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Feed after the interrupt: %v", err)
	}
}

// collLogFile writes a synthetic COLL-shaped log of size bytes to a file of a test's folder.
func collLogFile(t *testing.T, size int64) string {
	t.Helper()
	var data bytes.Buffer
	if err := writeSyntheticLogShape(&data, size, shapeColl); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nccl.log")
	if err := os.WriteFile(path, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openMapped opens path and maps it (mapMin 0), skipping where files are not mapped; the file is
// closed at the test's end.
func openMapped(t *testing.T, path string) (*os.File, *mapSource) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on unix; checked on linux")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	src := mappable(f, 0)
	if src == nil {
		t.Fatal("a regular file not mapped")
	}
	return f, src
}
