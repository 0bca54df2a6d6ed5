package nccl

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Shapes of the synthetic benchmark log (writeSyntheticLogShape).
const (
	shapeTuning = "tuning" // NCCL_DEBUG_SUBSYS with TUNING: the same few lines again (issue 16)
	shapeColl   = "coll"   // with COLL as well: one line per collective call, every one different (issue 32)
)

// writeSyntheticLog writes about size bytes of a 16-rank NCCL INFO log: init lines, channels over
// NET/IB with GDR, TUNING lines for every collective call (the bulk of a long NCCL_DEBUG_SUBSYS=
// TUNING log) and some application output without NCCL headers.
func writeSyntheticLog(w io.Writer, size int64) error {
	return writeSyntheticLogShape(w, size, shapeTuning)
}

// writeSyntheticLogShape writes the synthetic log in one of its shapes. shapeColl adds, before
// each TUNING line, the line NCCL prints for every collective call with NCCL_DEBUG_SUBSYS=COLL
// (NVIDIA/nccl src/enqueue.cc, ncclEnqueueCheck, the same format from 2.4 to 2.30):
//
//	INFO(NCCL_COLL, "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p", ...)
//
// with the opName of src/collectives.cc, a per-rank opCount that grows by one a call, and buffers
// and counts that change every call, as in a training job's log: no two such lines are alike.
func writeSyntheticLogShape(w io.Writer, size int64, shape string) error {
	coll := shape == shapeColl
	if !coll && shape != shapeTuning {
		return fmt.Errorf("unknown log shape %q (%s or %s)", shape, shapeTuning, shapeColl)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	put := func(s string) {
		k, _ := bw.WriteString(s)
		n += int64(k)
	}
	for r := 0; r < 16; r++ {
		h := "node-" + strconv.Itoa(r/8) + ":" + strconv.Itoa(1000+r) + ":" + strconv.Itoa(1100+r) + " [" + strconv.Itoa(r%8) + "] NCCL INFO "
		put("[1," + strconv.Itoa(r) + "]<stdout>:" + h + "NCCL version 2.21.5+cuda12.4\n")
		put("[1," + strconv.Itoa(r) + "]<stdout>:" + h + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB net1:10.0.0." + strconv.Itoa(r) + "<0>\n")
		put("[1," + strconv.Itoa(r) + "]<stdout>:" + h + "Using network IB\n")
		put("[1," + strconv.Itoa(r) + "]<stdout>:" + h + "comm 0x55d4 rank " + strconv.Itoa(r) + " nranks 16 cudaDev 0 busId 1b000 commId 0x9 - Init COMPLETE\n")
	}
	sizes := []int{8, 1024, 65536, 1048576, 16777216, 268435456}
	colls := []string{"AllReduce", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AllReduce"}
	var opCount [16]uint64
	var cl []byte
	for i := 0; n < size; i++ {
		r := i % 16
		pre := "[1," + strconv.Itoa(r) + "]<stdout>:node-" + strconv.Itoa(r/8) + ":" + strconv.Itoa(1000+r) + ":" + strconv.Itoa(1100+r) + " [" + strconv.Itoa(r%8) + "] NCCL INFO "
		switch i % 10 {
		case 0, 1:
			put(pre + fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA\n", i%32, r, r%8, (r+8)%16, r%8, i%2))
		case 2:
			put(fmt.Sprintf("step %d loss %.4f lr 3.0e-4 tokens/s 41235\n", i, 2.5-float64(i%1000)/1000))
		case 3:
			put(pre + "Channel 01/0 : 3[3] -> 4[4] via P2P/CUMEM/read\n")
		default:
			sz := sizes[i%len(sizes)]
			c := "AllReduce"
			if coll {
				c = colls[(i/10+i)%len(colls)]
				op := opCount[r]
				opCount[r]++
				buf := uint64(0x7f3a00000000) + uint64(r)<<28 + (op*0x1234567)&0xfffffff0
				cl = append(append(cl[:0], pre...), c...)
				cl = append(cl, ": opCount "...)
				cl = strconv.AppendUint(cl, op, 16)
				cl = append(cl, " sendbuff 0x"...)
				cl = strconv.AppendUint(cl, buf, 16)
				cl = append(cl, " recvbuff 0x"...)
				cl = strconv.AppendUint(cl, buf+uint64(sz), 16)
				cl = append(cl, " count "...)
				cl = strconv.AppendInt(cl, int64(sz/4+int(op%7)), 10)
				cl = append(cl, " datatype 7 op 0 root 0 comm 0x55d4a"...)
				cl = strconv.AppendInt(cl, int64(0x1000+r*0x40), 16)
				cl = append(cl, " [nranks=16] stream 0x55d4b"...)
				cl = strconv.AppendInt(cl, int64(0x2000+r*0x80), 16)
				cl = append(cl, '\n')
				put(string(cl))
			}
			put(pre + c + ": " + strconv.Itoa(sz) + " Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}\n")
		}
	}
	return bw.Flush()
}

func BenchmarkAnalyzeLog(b *testing.B) {
	var buf bytes.Buffer
	if err := writeSyntheticLog(&buf, 16<<20); err != nil {
		b.Fatal(err)
	}
	benchReader(b, buf.Bytes(), func(in io.Reader) error {
		r, err := AnalyzeLog(in)
		if err == nil && r.Transport != TransportIB {
			err = fmt.Errorf("transport %s", r.Transport)
		}
		return err
	})
}

// BenchmarkAnalyzeLogColl is BenchmarkAnalyzeLog on the COLL shape: a third of the lines are
// NCCL_DEBUG_SUBSYS=COLL lines, every one different (issue 32).
func BenchmarkAnalyzeLogColl(b *testing.B) {
	var buf bytes.Buffer
	if err := writeSyntheticLogShape(&buf, 64<<20, shapeColl); err != nil {
		b.Fatal(err)
	}
	benchReader(b, buf.Bytes(), func(in io.Reader) error {
		r, err := AnalyzeLog(in)
		if err == nil && r.Transport != TransportIB {
			err = fmt.Errorf("transport %s", r.Transport)
		}
		return err
	})
}

// benchReader times fn over data, read from a fresh reader each run: the MB/s and allocations
// go test -bench prints.
func benchReader(b *testing.B, data []byte, fn func(io.Reader) error) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := fn(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeLogFile analyses the file named by $AIN_BENCH_LOG (e.g. a 1 GB log from
// TestWriteSyntheticLog), to compare with `grep -c 'NET/' FILE` on the same file.
//
// Figures on 2 shared vCPUs (2026-12-02), 1 GiB synthetic 16-rank log, 10.1 M lines, page cache warm:
// this benchmark 3.7 s/op (289 MB/s, 270 allocs, 279 KB allocated per run); `ain doctor nccl-log`
// 2.3-2.5 s user, 2.7-4.7 s wall, 40 MB max RSS; `grep -c 'NET/'` 0.26-0.31 s user, 0.38-0.53 s
// wall, 2 MB max RSS. grep only counts one substring; the analyser parses every NCCL line.
//
// With the repeat cache and the line splitter (2026-12-03, same machine, load average 7-17), 512 MiB,
// 5.07 M lines: this benchmark 0.36 s/op (1.48 GB/s, 555 allocs, 6.8 MB allocated per run, all of
// it fixed-size); scripts/bench-nccl-log.sh: ain 0.31-0.49 s vs grep 0.16-0.33 s median wall
// (1.3-1.9x, was 4.8-7.8x), 43-45 MiB peak RSS of which ~37 MiB is the ain binary's own baseline;
// CPU time ain 0.25-0.3 s (user+sys) vs grep 0.14 s. Wall times on this shared machine are mostly
// waiting for a CPU or the disk, for both tools.
//
// With the parallel splitter and the known-lines table (2026-12-03, same machine, load average
// 2.4-2.7, 512 MiB): this benchmark 114-123 ms/op (4.4-4.7 GB/s; 153-157 ms/op before, run
// alternately), ~850 allocs and 8.7-8.9 MB allocated per run (blocks of 2 MiB capacity, half of
// it never touched); scripts/bench-nccl-log.sh: ain 0.12 s vs grep 0.12 s median wall, median of
// 9 paired ratios 0.92x (12 rounds alternating grep, the previous build and this one: 1.39x vs
// 1.00x), CPU 0.18-0.21 s vs 0.26 s before, peak RSS 42.5-43.6 MiB (42.5 before).
//
// COLL-heavy logs (issue 32; 2026-12-05, same machine shared with a CI run, load average 0.2-1.6;
// 512 MiB coll shape, 3.78 M lines of which 1.42 M COLL; 11 paired rounds each): before,
// scripts/bench-nccl-log.sh gave ain 0.59-0.60 s vs grep 0.08-0.10 s median wall (6.1-10.5x),
// CPU 0.71-0.76 s, 42.2-42.6 MiB; after (COLL lines counted by the workers, lines that only count
// counted per block, indexNCCL, no look-up of lines longer than every known one, a spare block),
// ain 0.105-0.111 s vs grep 0.089-0.097 s (1.11-1.18x), CPU 0.15-0.17 s, 42.9-43.1 MiB. Of ain's
// time ~12 ms is starting the process (package init; grep: ~3.5 ms), so the scan itself runs at
// ~1.0x grep. BenchmarkAnalyzeLogColl: 870-920 MB/s before, 7.4-7.9 GB/s after (2 cores); the
// tuning shape went from 0.90x to 0.69x grep. What is left is per line: a newline search, a
// look-up and compare of a known line or the COLL checks, ~15-20 ns, and the kernel's copy of
// the file (~45 ms of CPU for 512 MiB here, which grep pays too).
func BenchmarkAnalyzeLogFile(b *testing.B) {
	path := os.Getenv("AIN_BENCH_LOG")
	if path == "" {
		b.Skip("set AIN_BENCH_LOG to a log file (AIN_GEN_LOG=FILE AIN_GEN_LOG_MB=1024 go test -run TestWriteSyntheticLog writes one)")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := AnalyzeLog(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(r.Lines), "lines")
	}
}

// TestWriteSyntheticLog writes the synthetic benchmark log to $AIN_GEN_LOG ($AIN_GEN_LOG_MB MiB,
// shape $AIN_GEN_LOG_SHAPE: tuning, the default, or coll); it does nothing unless asked, and never
// writes into the repository by default.
func TestWriteSyntheticLog(t *testing.T) {
	path := os.Getenv("AIN_GEN_LOG")
	if path == "" {
		t.Skip("set AIN_GEN_LOG=FILE (outside the repository) to write the synthetic benchmark log")
	}
	mb, _ := strconv.Atoi(os.Getenv("AIN_GEN_LOG_MB"))
	if mb <= 0 {
		mb = 1024
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shape := os.Getenv("AIN_GEN_LOG_SHAPE")
	if shape == "" {
		shape = shapeTuning
	}
	if err := writeSyntheticLogShape(f, int64(mb)<<20, shape); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeLogConstantMemory checks that a log 16x larger does not grow what the analyser keeps.
func TestAnalyzeLogConstantMemory(t *testing.T) {
	var small, big bytes.Buffer
	if err := writeSyntheticLog(&small, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := writeSyntheticLog(&big, 16<<20); err != nil {
		t.Fatal(err)
	}
	a1, _ := AnalyzeLog(bytes.NewReader(small.Bytes()))
	a2, _ := AnalyzeLog(bytes.NewReader(big.Bytes()))
	if len(a1.Evidence) != len(a2.Evidence) || len(a1.Tuning) != len(a2.Tuning) || len(a1.PerRank) != len(a2.PerRank) {
		t.Errorf("report grows with input: evidence %d/%d tuning %d/%d", len(a1.Evidence), len(a2.Evidence), len(a1.Tuning), len(a2.Tuning))
	}
	allocs := testing.AllocsPerRun(1, func() {
		if _, err := AnalyzeLog(bytes.NewReader(big.Bytes())); err != nil {
			t.Fatal(err)
		}
	})
	// ~300k lines: allocations must not be per line.
	if allocs > 5000 {
		t.Errorf("%v allocations for a 16 MiB log: something allocates per line", allocs)
	}
}

func BenchmarkParsePerf(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("testdata", "perf", "*.txt"))
	var buf bytes.Buffer
	for buf.Len() < 4<<20 {
		for _, p := range files {
			d, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(d)
		}
	}
	benchReader(b, buf.Bytes(), func(in io.Reader) error {
		_, err := ParsePerf(in)
		return err
	})
}
