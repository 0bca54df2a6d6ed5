package nccl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// collSamples are COLL lines as NCCL prints them (src/enqueue.cc), with launcher prefixes, a
// NULL buffer, CRLF and trailing spaces.
var collSamples = []string{
	"gpu-node-1:1234:1290 [0] NCCL INFO AllReduce: opCount 1a2b sendbuff 0x7f3a21234560 recvbuff 0x7f3a22234560 count 1048576 datatype 7 op 0 root 0 comm 0x55d4a1080 [nranks=16] stream 0x55d4b2100",
	"[1,3]<stdout>:gpu-node-1:1234:1290 [3] NCCL INFO AllGather: opCount 0 sendbuff 0x7f00 recvbuff 0x7f80 count 8 datatype 0 op 0 root 0 comm 0x1 [nranks=2] stream 0x2",
	"3: gpu-node-1:1234:1290 [0] NCCL INFO Send: opCount 5 sendbuff (nil) recvbuff 0x7f3a22234560 count 64 datatype 9 op 0 root 1 comm 0x55d4a1080 [nranks=16] stream 0x55d4b2100\r",
	"gpu-node-1:1234:1290 [0] NCCL INFO Recv: opCount 5 sendbuff (nil) recvbuff (nil) count 0 datatype 9 op 0 root -1 comm 0x55d4a1080 [nranks=16] stream 0x55d4b2100   ",
	"gpu-node-1:1234:1290 [0] NCCL INFO ReduceScatter: opCount ffffffffffff sendbuff 0x7f recvbuff 0x7f count 18446744073709551615 datatype 7 op 4 root 0 comm 0x55 [nranks=4096] stream 0x55",
	"2024-05-01T12:00:00.123Z gpu-node-1:1234:1290 [0] NCCL INFO Broadcast: opCount 2 sendbuff 0x7f recvbuff 0x7f count 3 datatype 7 op 0 root 3 comm 0x55 [nranks=8] stream 0x56",
}

// collNearMisses start like COLL lines but are not only counted: the analyser must parse them
// (some change the report: a TUNING choice, a channel, an env echo, GPUDirect).
var collNearMisses = []string{
	"h:1:2 [0] NCCL INFO AllReduce: opCount 5 Bytes -> Algo RING proto SIMPLE",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 5 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f via NET/IB/0/GDRDMA",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 1 NCCL_IB_HCA set by environment to mlx5_0",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 1 GPU Direct RDMA Disabled for HCA 0",
	"h:1:2 [0] NCCL INFO ncclCommInitRank: opCount 1 comm 0x55 rank 3 nranks 16",
	"h:1:2 [0] NCCL INFO Channel: opCount 1 via NET/Socket/0",
	"h:1:2 [0] NCCL WARN AllReduce: opCount 1 sendbuff 0x7f",
	"h:1:2 [0] NCCL Foo AllReduce: opCount 1 sendbuff 0x7f NCCL INFO x",
	"h:1:2 [0] NCCL INFO allreduce: opCount 1 sendbuff 0x7f",
	"h:1:2 [0] NCCL INFO AllReduce : opCount 1 sendbuff 0x7f",
	"h:1:2 [0] NCCL INFO AllReduce: opCount1 sendbuff 0x7f",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f -> (nil",
	"h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f stdin",
}

func TestIsCollLine(t *testing.T) {
	for _, l := range collSamples {
		if i := bytes.Index([]byte(l), bNCCL); i < 0 || !isCollLine([]byte(l)[i:]) {
			t.Errorf("not recognised as a COLL line: %q", l)
		}
	}
	for _, l := range collNearMisses {
		if i := bytes.Index([]byte(l), bNCCL); i >= 0 && isCollLine([]byte(l)[i:]) {
			t.Errorf("taken for a COLL line: %q", l)
		}
	}
}

// TestCollMarkers keeps log_coll.go's argument true: every substring infoLine tests with
// bytes.Contains holds a '>' or an 'i' that is not the one of "(nil)", and no opName starts like a
// message infoLine dispatches on by prefix. A substring added to infoLine belongs here.
func TestCollMarkers(t *testing.T) {
	for _, m := range [][]byte{bBytesAlgo, bSetByEnv, bGDR, bVia} {
		ok := bytes.IndexByte(m, '>') >= 0
		for k, c := range m {
			if c == 'i' && !(k >= 2 && bytes.HasPrefix(m[k-2:], bNil)) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("infoLine's %q has neither '>' nor an 'i': isCollLine would count lines holding it", m)
		}
	}
	prefixes := [][]byte{bVersion, bUsingNetwork, bChannel, bRing, bOFI, bNET, bNetIBOld, bVerbsOpen, bInternalSocket,
		[]byte("NCCL_"), []byte("comm "), []byte("ncclCommInit"), []byte("Init COMPLETE")}
	for _, op := range []string{"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv",
		"AlltoAll", "Gather", "Scatter", "PutSignal", "Signal", "WaitSignal"} {
		if !collOp([]byte(op)) {
			t.Errorf("collOp(%q) false", op)
		}
		msg := []byte(op + ": opCount 0")
		for _, p := range prefixes {
			if bytes.HasPrefix(msg, p) {
				t.Errorf("opName %s starts like infoLine's %q", op, p)
			}
		}
	}
}

// reportJSON analyses data with the cache on (known table after knownAfter lines, blocks of
// splitRead bytes; 0: the defaults) or off (every line parsed), and returns the report as JSON.
func reportJSON(t *testing.T, data []byte, off bool, knownAfter, splitRead int) ([]byte, *LogAnalyzer) {
	t.Helper()
	a := NewLogAnalyzer()
	a.rc.off = off
	if knownAfter > 0 {
		a.knownAfter = knownAfter
	}
	a.splitRead = splitRead
	if err := a.Feed("", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a.Report())
	if err != nil {
		t.Fatal(err)
	}
	return b, a
}

// TestCollLinesCounted: COLL lines are counted as NCCL lines, never change a verdict and give
// the report of a full parse, on the synthetic COLL-heavy log (where they are most lines) and on
// sample logs with COLL lines and near misses mixed in.
func TestCollLinesCounted(t *testing.T) {
	var buf bytes.Buffer
	if err := writeSyntheticLogShape(&buf, 4<<20, shapeColl); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var lines, nccl, coll int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines++
		if bytes.Contains(sc.Bytes(), bNCCLInfo) {
			nccl++
		}
		if bytes.Contains(sc.Bytes(), []byte(": opCount ")) {
			coll++
		}
	}
	on, a := reportJSON(t, data, false, 0, 0)
	off, _ := reportJSON(t, data, true, 0, 0)
	if !bytes.Equal(on, off) {
		t.Errorf("the COLL prefilter changes the report:\n%s\nvs a full parse:\n%s", on, off)
	}
	r := a.Report()
	if r.Lines != lines || r.NCCLLines != nccl {
		t.Errorf("%d lines, %d NCCL lines; want %d, %d", r.Lines, r.NCCLLines, lines, nccl)
	}
	// Most COLL lines come after the known table is made, in blocks split by the workers.
	if coll < 10000 || a.collLines < coll/2 || a.collLines > coll {
		t.Errorf("%d of %d COLL lines counted by the prefilter", a.collLines, coll)
	}
	// The same log with each COLL line's message replaced by one that infoLine ignores: the same
	// report, verdict, evidence lines and counts included.
	var blank bytes.Buffer
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if i := bytes.Index(l, bNCCLInfo); i >= 0 && bytes.Contains(l, []byte(": opCount ")) {
			l = append(l[:i+len(bNCCLInfo):i+len(bNCCLInfo)], "x\n"...)
		}
		blank.Write(l)
	}
	want, _ := json.Marshal(AnalyzeLogOrFail(t, blank.Bytes()))
	if !bytes.Equal(on, want) {
		t.Errorf("COLL lines change the report:\n%s\nwith other NCCL lines in their place:\n%s", on, want)
	}

	// Sample logs (each verdict a different one) with COLL lines and near misses between their
	// lines: the report is the full parse's, the small blocks and early known table taking the
	// paths of a long log.
	for _, f := range []string{"roce-2.21.log", "socket-no-device.log", "gdr-disabled.log", "mixed-ranks.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", "logs", f))
		if err != nil {
			t.Fatal(err)
		}
		var mixed bytes.Buffer
		for i, l := range bytes.SplitAfter(b, []byte("\n")) {
			mixed.Write(l)
			mixed.WriteString(collSamples[i%len(collSamples)] + "\n")
			if i%3 == 0 {
				mixed.WriteString(collNearMisses[i%len(collNearMisses)] + "\n")
			}
		}
		data := bytes.Repeat(mixed.Bytes(), 3)
		on, _ := reportJSON(t, data, false, 4, 64)
		off, _ := reportJSON(t, data, true, 0, 0)
		if !bytes.Equal(on, off) {
			t.Errorf("%s with COLL lines: the prefilter changes the report:\n%s\nvs a full parse:\n%s", f, on, off)
		}
	}
}

// AnalyzeLogOrFail is AnalyzeLog for tests.
func AnalyzeLogOrFail(t *testing.T, data []byte) *LogReport {
	t.Helper()
	r, err := AnalyzeLog(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzCollLineExact: a line the prefilter takes for a COLL line does nothing in a full parse but
// count as an NCCL line (its report is the one of the same line with an empty message), and a
// log of such lines gives the full parse's report.
func FuzzCollLineExact(f *testing.F) {
	for _, l := range collSamples {
		f.Add([]byte(l))
	}
	for _, l := range collNearMisses {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		line, _, _ := bytes.Cut(in, []byte("\n"))
		if i := bytes.Index(line, bNCCL); i >= 0 && isCollLine(line[i:]) {
			got, _ := reportJSON(t, line, true, 0, 0)
			ref := append(append([]byte(nil), line[:i+len(bNCCLInfo)]...), 'x')
			want, _ := reportJSON(t, ref, true, 0, 0)
			if !bytes.Equal(got, want) {
				t.Fatalf("COLL line %q is more than an NCCL line:\n%s\nvs\n%s", line, got, want)
			}
		}
		data := bytes.Repeat(append(append([]byte(nil), in...), '\n'), 3)
		on, _ := reportJSON(t, data, false, 4, 64)
		off, _ := reportJSON(t, data, true, 0, 0)
		if !bytes.Equal(on, off) {
			t.Fatalf("the prefilter changes the report:\n%s\nvs a full parse:\n%s", on, off)
		}
	})
}
