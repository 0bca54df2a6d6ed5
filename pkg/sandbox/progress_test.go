package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// completeCache is a binary cache where every component counts as built.
func completeCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	for _, c := range Components() {
		if err := os.MkdirAll(c.Dir(cache), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir(cache), ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cache
}

// TestBuildProgress checks the progress line: nothing to build on a complete cache; done/total,
// what is building and the time left from the components' cold costs at this machine's pace.
func TestBuildProgress(t *testing.T) {
	cache := completeCache(t)
	if b := StartBuild(context.Background(), cache, DefaultStack, time.Now); b != nil {
		t.Fatal("a complete cache started a build")
	}
	// A clock the test moves: etcd takes 6 minutes, four times its reference cold cost (90 s),
	// so what is left counts four times the reference figures (kwok 75 s, jobset 45 s,
	// kubernetes 7m0s); once three are done in 11m15s (3.2 times their 3m30s), Kubernetes
	// alone is 22m30s at that pace (said as 23m0s): all of what is left.
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	now := t0
	clock := NewBuildClock([]string{"etcd", "kwok", "jobset", "kubernetes"}, func() time.Time { return now })
	b := &BackgroundBuild{clock: clock, fin: make(chan struct{})}
	if got, want := b.Line(), "sandbox build: 0/4 components done, building etcd, 0s elapsed, about 11m0s left"; got != want {
		t.Errorf("line() before any component = %q, want %q", got, want)
	}
	now = t0.Add(6 * time.Minute)
	clock.Step(1, "kwok")
	if got, want := b.Line(), "sandbox build: 1/4 components done, building kwok, 6m0s elapsed, about 36m0s left"; got != want {
		t.Errorf("line() = %q, want %q", got, want)
	}
	now = t0.Add(11*time.Minute + 15*time.Second)
	clock.Step(3, "kubernetes")
	if got, want := b.Line(), "sandbox build: 3/4 components done, building kubernetes, 11m15s elapsed, about 23m0s left"; got != want {
		t.Errorf("line() with kubernetes left = %q, want %q", got, want)
	}
	close(b.fin)
	clock.Step(4, "")
	var lines []string
	if err := b.Wait(context.Background(), time.Hour, func(l string) { lines = append(lines, l) }); err != nil || len(lines) != 1 || !strings.Contains(lines[0], "4/4 components done") {
		t.Errorf("Wait: %v, %q", err, lines)
	}
}
