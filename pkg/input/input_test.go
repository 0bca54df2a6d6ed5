package input

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// zeros is an endless input, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestReaderEndsOnCancel: a Read blocked on a pipe whose writer never writes (stdin held open by
// a shell or a parent) returns ctx's error once ctx is cancelled; a plain Read would block forever.
func TestReaderEndsOnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, pr)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 4096))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read returned %v, want context.Canceled", err)
		}
		t.Logf("Read returned %s after cancel", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("Read still blocked 2s after cancel")
	}
}

// TestReaderPassesData: data and EOF come through unchanged, in reads smaller and larger than
// the caller's buffer, for a pipe and for a regular file.
func TestReaderPassesData(t *testing.T) {
	want := strings.Repeat("line of text\n", 50000)
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, want)
		pw.Close()
	}()
	got, err := io.ReadAll(Reader(context.Background(), pr))
	if err != nil || string(got) != want {
		t.Errorf("pipe: %d bytes, err %v; want %d bytes", len(got), err, len(want))
	}
	f, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(want); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, f)
	if _, ok := r.(*checkedReader); !ok {
		t.Errorf("a regular file got a %T, want the checked reader (no goroutine per Read)", r)
	}
	got, err = io.ReadAll(r)
	if err != nil || string(got) != want {
		t.Errorf("file: %d bytes, err %v", len(got), err)
	}
	cancel()
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("file Read after cancel: %v", err)
	}
}

// TestReadAllBound: an endless input is refused once past the bound, with the bound in the error.
func TestReadAllBound(t *testing.T) {
	_, err := ReadAll(zeros{}, "stdin", 3<<20)
	var large *TooLargeError
	if !errors.As(err, &large) || err.Error() != "stdin is larger than 3 MiB" {
		t.Errorf("endless input: %v", err)
	}
	b, err := ReadAll(strings.NewReader(strings.Repeat("a", 3<<20)), "x", 3<<20)
	if err != nil || len(b) != 3<<20 {
		t.Errorf("input of exactly the bound: %d bytes, %v", len(b), err)
	}
	b, err = ReadAll(strings.NewReader(""), "x", 10)
	if err != nil || b == nil || len(b) != 0 {
		t.Errorf("empty input: %v %v", b, err)
	}
}

// TestReadFileDevZero: /dev/zero is refused at the bound (os.ReadFile would never return).
func TestReadFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := ReadFile("/dev/zero", 1<<20)
	if err == nil || err.Error() != "/dev/zero is larger than 1 MiB" {
		t.Errorf("ReadFile(/dev/zero): %v", err)
	}
	big := t.TempDir() + "/big"
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var large *TooLargeError
	if _, err := ReadFile(big, 1<<20); !errors.As(err, &large) {
		t.Errorf("a 2 MiB file with a 1 MiB bound: %v", err)
	}
}

func TestScanError(t *testing.T) {
	sc := bufio.NewScanner(strings.NewReader("ok\n" + strings.Repeat("x", 100)))
	sc.Buffer(nil, 64)
	n := 0
	for sc.Scan() {
		n++
	}
	err := ScanError(sc.Err(), n+1, 64)
	if err == nil || err.Error() != "line 2 is longer than 64 bytes, the most a line of this input may hold" {
		t.Errorf("ScanError: %v", err)
	}
	if err := ScanError(io.ErrClosedPipe, 3, 64); err.Error() != "line 3: io: read/write on closed pipe" || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("other error: %v", err)
	}
}
