package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// offlineReaders are the commands that read a FILE argument, with - for standard input.
var offlineReaders = [][]string{
	{"doctor", "nccl-log", "-"},
	{"doctor", "launcher", "-"},
	{"doctor", "ib-ports", "-"},
	{"doctor", "counters", "-"},
	{"doctor", "hang", "-"},
	{"doctor", "topo", "-"},
	{"doctor", "gpu", "-"},
	{"bench", "parse", "-"},
	{"train", "compare", "-", "run.log"},
}

// TestOfflineReadersEndOnInterrupt: each offline reader, its standard input a pipe that delivered
// some lines and is never closed, ends when the context is cancelled (what main does on SIGINT
// and SIGTERM) with exit 130 and says it was interrupted while reading stdin. Before, the read
// ignored the context and only SIGKILL ended the process.
func TestOfflineReadersEndOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.log"), []byte("{'loss': 1.0, 'epoch': 0.1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, args := range offlineReaders {
		t.Run(strings.Join(args[:2], "-"), func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errb bytes.Buffer
			a := &App{Streams: Streams{In: pr, Out: &out, Err: &errb}, Now: time.Now, Getenv: func(string) string { return "" }}
			done := make(chan int, 1)
			go func() { done <- a.Run(ctx, append([]string{"ain"}, args...)) }()
			// The write returns once the command has read it: it is reading stdin.
			if _, err := io.WriteString(pw, "NCCL INFO some line\n"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			cancel()
			select {
			case code := <-done:
				if code != 130 || !strings.Contains(errb.String(), "interrupted while reading stdin") {
					t.Errorf("exit %d, want 130 and 'interrupted while reading stdin'\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
				}
				if out.Len() > 0 {
					t.Errorf("a verdict on part of the input: %s", out.String())
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("ended %s after the interrupt", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5s after the interrupt; stderr: %s", errb.String())
			}
		})
	}
}

// TestOfflineInputsBounded: an endless input (/dev/zero) ends with an error that names the file
// and the bound, instead of spinning (doctor nccl-log: minutes at full CPU) or filling memory
// (render -f: 1.1 GB in 7 s); a long line is no raw "bufio.Scanner: token too long".
func TestOfflineInputsBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	long := filepath.Join(t.TempDir(), "long.txt")
	if err := os.WriteFile(long, []byte(strings.Repeat("x", 2<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"doctor", "nccl-log", "/dev/zero"}, 1, "error: /dev/zero: line 1 is longer than 256 MiB"},
		{[]string{"doctor", "ib-ports", "/dev/zero"}, 1, "error: /dev/zero: line 1 is longer than 1 MiB"},
		{[]string{"doctor", "ib-ports", long}, 1, "error: " + long + ": line 1 is longer than 1 MiB"},
		{[]string{"doctor", "counters", long}, 1, "error: " + long + ": line 1 is longer than 1 MiB"},
		{[]string{"doctor", "topo", "/dev/zero"}, 1, "error: /dev/zero is larger than 16 MiB"},
		{[]string{"doctor", "gpu", "/dev/zero"}, 1, "error: /dev/zero is larger than 64 MiB"},
		{[]string{"render", "-f", "/dev/zero"}, 2, "error: recipe file /dev/zero is larger than 4 MiB"},
		{[]string{"render", "qlora", "--profile", "/dev/zero"}, 2, "error: profile /dev/zero is larger than 4 MiB"},
	} {
		start := time.Now()
		code, out, errb := runDoctorCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errb, c.want) || strings.Contains(errb, "bufio.Scanner") {
			t.Errorf("ain %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.code, c.want, out, errb)
		}
		t.Logf("ain %s: %s", strings.Join(c.args, " "), time.Since(start))
	}
}
