package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/demo"
)

// TestDemoOfflineSteps runs the steps `ain demo` shows while the sandbox builds: each must pass
// with no cluster and say what the course expects of it.
func TestDemoOfflineSteps(t *testing.T) {
	out := t.TempDir()
	steps, err := demo.OfflineSteps(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"spec:", "kind: TrainJob", "ring", "NCCL used InfiniBand"}
	if len(steps) != len(want) {
		t.Fatalf("%d offline steps, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		if s.Cluster {
			t.Errorf("%s: an offline step must not need the cluster", s.Title)
		}
		var o, e bytes.Buffer
		a := &App{Streams: Streams{In: strings.NewReader(""), Out: &o, Err: &e}, Now: time.Now,
			Getenv: func(k string) string { return map[string]string{"HOME": out}[k] }}
		if code := a.Run(context.Background(), append([]string{"ain"}, s.Args()...)); code != 0 {
			t.Errorf("%s: exit %d\n%s", s.Title, code, e.String())
		}
		if got := o.String() + e.String(); !strings.Contains(got, want[i]) {
			t.Errorf("%s: output lacks %q:\n%s", s.Title, want[i], got)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "recorded-nccl-rank1.log")); err != nil {
		t.Errorf("the recorded log is not in the results folder: %v", err)
	}
}

// TestDemoOutChecked: a --out that cannot be made is a usage error naming the flag, before the
// sandbox or any build starts (it was 'open DIR/course-qa.yaml: no such file or directory').
func TestDemoOutChecked(t *testing.T) {
	home := t.TempDir()
	blocker := filepath.Join(home, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	a := &App{Streams: Streams{In: strings.NewReader(""), Out: &o, Err: &e}, Now: time.Now,
		Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
	code := a.Run(context.Background(), []string{"ain", "demo", "--state-dir", filepath.Join(home, "state"), "--out", filepath.Join(blocker, "results")})
	if code != 2 || !strings.Contains(e.String(), "--out "+filepath.Join(blocker, "results")) {
		t.Fatalf("exit %d, want 2 naming --out:\n%s", code, e.String())
	}
	if _, err := os.Stat(filepath.Join(home, "state")); err == nil {
		t.Error("the sandbox state folder was made before --out was checked")
	}
}
