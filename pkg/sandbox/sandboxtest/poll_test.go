package sandboxtest

import (
	"testing"
	"time"
)

// TestPoll: Poll stops at the first true (calling try no more), and gives up once within has
// passed, having called try at least once after it.
func TestPoll(t *testing.T) {
	calls := 0
	took, ok := Poll(time.Second, time.Millisecond, func() bool { calls++; return calls == 3 })
	if !ok || calls != 3 || took >= time.Second {
		t.Errorf("true on the 3rd call: ok %v after %d calls, %s", ok, calls, took)
	}
	calls = 0
	took, ok = Poll(20*time.Millisecond, 5*time.Millisecond, func() bool { calls++; return false })
	if ok || took < 20*time.Millisecond || calls < 2 {
		t.Errorf("never true: ok %v after %d calls, %s (want false after >= 20ms)", ok, calls, took)
	}
	calls = 0
	if _, ok = Poll(0, time.Hour, func() bool { calls++; return true }); !ok || calls != 1 {
		t.Errorf("true at once: ok %v after %d calls", ok, calls)
	}
}
