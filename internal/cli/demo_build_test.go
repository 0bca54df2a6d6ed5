package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/sandbox"
)

// TestDemoOfflineSteps runs the steps `ain demo` shows while the sandbox builds: each must pass
// with no cluster and say what the course expects of it.
func TestDemoOfflineSteps(t *testing.T) {
	out := t.TempDir()
	steps, err := demoOfflineSteps(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"spec:", "kind: TrainJob", "ring", "NCCL used InfiniBand"}
	if len(steps) != len(want) {
		t.Fatalf("%d offline steps, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		if s.cluster {
			t.Errorf("%s: an offline step must not need the cluster", s.title)
		}
		var o, e bytes.Buffer
		a := &App{Streams: Streams{In: strings.NewReader(""), Out: &o, Err: &e}, Now: time.Now,
			Getenv: func(k string) string { return map[string]string{"HOME": out}[k] }}
		if code := a.Run(context.Background(), append([]string{"ain"}, s.args()...)); code != 0 {
			t.Errorf("%s: exit %d\n%s", s.title, code, e.String())
		}
		if got := o.String() + e.String(); !strings.Contains(got, want[i]) {
			t.Errorf("%s: output lacks %q:\n%s", s.title, want[i], got)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "recorded-nccl-rank1.log")); err != nil {
		t.Errorf("the recorded log is not in the results folder: %v", err)
	}
}

// TestDemoBuildProgress checks the progress line: nothing to build on a complete cache; done/total,
// what is building and the time left from the components' cold costs at this machine's pace.
func TestDemoBuildProgress(t *testing.T) {
	cache := t.TempDir()
	for _, c := range sandbox.Components() {
		if err := os.MkdirAll(c.Dir(cache), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir(cache), ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b := startDemoBuild(context.Background(), cache); b != nil {
		t.Fatal("a complete cache started a build")
	}
	// A clock the test moves: etcd takes 3 minutes, about four times its reference cold cost
	// (43 s), so what is left counts about four times the reference figures; once three are done
	// in 9 minutes, Kubernetes' share is still most of what is left.
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	now := t0
	clock := newBuildClock([]string{"etcd", "kwok", "jobset", "kubernetes"}, func() time.Time { return now })
	b := &demoBuild{start: t0, clock: clock, fin: make(chan struct{})}
	if got, want := b.line(), "sandbox build: 0/4 components done, building etcd, 0s elapsed, about 8m0s left"; got != want {
		t.Errorf("line() before any component = %q, want %q", got, want)
	}
	now = t0.Add(3 * time.Minute)
	clock.step(1, "kwok")
	if got, want := b.line(), "sandbox build: 1/4 components done, building kwok, 3m0s elapsed, about 32m0s left"; got != want {
		t.Errorf("line() = %q, want %q", got, want)
	}
	now = t0.Add(9 * time.Minute)
	clock.step(3, "kubernetes")
	if got, want := b.line(), "sandbox build: 3/4 components done, building kubernetes, 9m0s elapsed, about 15m0s left"; got != want {
		t.Errorf("line() with kubernetes left = %q, want %q", got, want)
	}
	close(b.fin)
	clock.step(4, "")
	var w bytes.Buffer
	if err := b.wait(context.Background(), &w, time.Hour); err != nil || !strings.Contains(w.String(), "4/4 components done") {
		t.Errorf("wait: %v, %q", err, w.String())
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
