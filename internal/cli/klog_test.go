package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/ain-hpc/ain/pkg/kube"
)

// captureStderr returns what f wrote to the process's stderr (where klog writes).
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	f()
	os.Stderr = old
	w.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// Issue 19: client-go's raw log lines (reflector.go "Warning: watch ended with error") reached the
// terminal during an API server outage. After any ain command has started, klog writes nothing;
// -v -v -v lets it through.
func TestClientLogsQuiet(t *testing.T) {
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, Now: time.Now, Getenv: func(string) string { return "" }}
	if code := a.Run(context.Background(), []string{"ain", "version"}); code != 0 {
		t.Fatalf("version: exit %d", code)
	}
	got := captureStderr(t, func() {
		klog.Warning("Warning: watch ended with error")
		klog.ErrorS(nil, "reflector failed to list")
		klog.Flush()
	})
	if got != "" {
		t.Errorf("klog reached stderr: %q", got)
	}
	if code := a.Run(context.Background(), []string{"ain", "-v", "-v", "-v", "version"}); code != 0 {
		t.Fatalf("-vvv version: exit %d", code)
	}
	defer kube.QuietClientLogs(0)
	got = captureStderr(t, func() {
		klog.ErrorS(nil, "reflector failed to list")
		klog.Flush()
	})
	if !strings.Contains(got, "reflector failed to list") {
		t.Errorf("-vvv: klog silenced: %q", got)
	}
}
