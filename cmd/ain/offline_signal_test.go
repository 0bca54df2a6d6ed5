package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOfflineReaderSignals runs the real ain (this test binary as main) on standard input that
// is a pipe never closed, the way `tail -f x | ain doctor nccl-log -` or a shell waiting on a
// terminal leaves it, and sends SIGINT or SIGTERM while it reads: it exits 130 within a few
// seconds and says it was interrupted. Before, only SIGKILL ended it.
func TestOfflineReaderSignals(t *testing.T) {
	// 1 MiB of lines: more than a pipe holds, so the write returns only once ain is reading
	// (past start-up, its signal handling installed).
	lines := bytes.Repeat([]byte("host:1:2 [0] NCCL INFO cudaDriverVersion 12040\n"), 1<<20/48)
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
	}{
		{syscall.SIGINT, []string{"doctor", "nccl-log", "-"}},
		{syscall.SIGTERM, []string{"doctor", "nccl-log", "-"}},
		{syscall.SIGINT, []string{"doctor", "launcher", "-"}},
		{syscall.SIGINT, []string{"bench", "parse", "-"}},
	} {
		t.Run(c.sig.String()+"/"+strings.Join(c.args[:2], "-"), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], c.args...)
			cmd.Env = append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir(), "KUBECONFIG=")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			if _, err := stdin.Write(lines); err != nil {
				t.Fatalf("writing stdin: %v (stderr: %s)", err, stderr.String())
			}
			sent := time.Now()
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				code := 0
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
				if code != 130 || !strings.Contains(stderr.String(), "interrupted while reading stdin") {
					t.Errorf("exit %d (%v), want 130 and 'interrupted while reading stdin'; stderr: %s", code, err, stderr.String())
				}
				t.Logf("%s ended %s after %v", strings.Join(c.args, " "), time.Since(sent).Round(time.Millisecond), c.sig)
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5s after %v; stderr: %s", c.sig, stderr.String())
			}
		})
	}
}
