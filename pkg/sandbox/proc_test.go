package sandbox

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	ephLo, ephHi := ephemeralRange()
	lo, hi := listenPortRange(ephLo, ephHi)
	if hi <= lo {
		t.Skipf("no room outside the ephemeral range %d-%d on this machine", ephLo, ephHi)
	}
	ports, err := freePorts(40)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= ephLo && p <= ephHi {
			t.Errorf("port %d is in the ephemeral range %d-%d, where an outgoing connection can take it", p, ephLo, ephHi)
		}
		if seen[p] {
			t.Errorf("port %d chosen twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestListenPortRange(t *testing.T) {
	for _, c := range []struct{ ephLo, ephHi, lo, hi int }{
		{32768, 60999, 10000, 32768}, // Linux's default
		{1024, 60999, 61000, 65536},  // ephemeral range starting low: above it
		{1024, 65535, 0, 0},          // no room: the kernel's choice
		{11000, 65000, 0, 0},
	} {
		lo, hi := listenPortRange(c.ephLo, c.ephHi)
		if lo != c.lo || hi != c.hi {
			t.Errorf("listenPortRange(%d, %d) = %d, %d; want %d, %d", c.ephLo, c.ephHi, lo, hi, c.lo, c.hi)
		}
	}
}
