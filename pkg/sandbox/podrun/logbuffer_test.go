package podrun

import "testing"

// TestLogBufferSince: a poller gets each byte once, in order, and is told when the cap dropped
// bytes it had not got.
func TestLogBufferSince(t *testing.T) {
	l := newLogBuffer(8)
	_, _ = l.Write([]byte("abc"))
	d, n, cut := l.Since(0)
	if string(d) != "abc" || n != 3 || cut {
		t.Fatalf("Since(0) = %q %d %v", d, n, cut)
	}
	_, _ = l.Write([]byte("def"))
	if d, n, cut = l.Since(n); string(d) != "def" || n != 6 || cut {
		t.Fatalf("Since(3) = %q %d %v", d, n, cut)
	}
	_, _ = l.Write([]byte("0123456789")) // 16 written, "23456789" kept
	if d, n, cut = l.Since(n); string(d) != "23456789" || n != 16 || !cut {
		t.Fatalf("Since(6) after the cap = %q %d %v", d, n, cut)
	}
	if d, _, cut = l.Since(n); len(d) != 0 || cut {
		t.Fatalf("Since(16) = %q %v", d, cut)
	}
}
