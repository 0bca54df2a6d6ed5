package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// The perftest samples' numbers (samples/perftest/): a client's table consistent with the rate
// of the link between the two nodes (SampleData.PathGbps). Rows are printed with perftest's own
// formats (src/perftest_parameters.h REPORT_FMT and REPORT_FMT_LAT, linux-rdma/perftest).
const (
	// perftestEfficiency: ib_write_bw reaches about 97% of an HDR/NDR port's signalling rate.
	perftestEfficiency = 0.97
	// perftestMpps: the small-message rate of one QP (millions of messages per second).
	perftestMpps = 7.0
	// perftestBaseLatUs: ib_write_lat's 2-byte typical latency over one IB switch.
	perftestBaseLatUs = 0.98
)

// argOf returns the value after flag in a command line ("-q 4" -> "4"), or def.
func argOf(cmd, flag, def string) string {
	f := strings.Fields(cmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			return f[i+1]
		}
	}
	return def
}

// perftestSizes are the sizes of a run: -s N, else -a (2 B to 8 MiB).
func perftestSizes(cmd string) []int64 {
	if s, err := strconv.ParseInt(argOf(cmd, "-s", ""), 10, 64); err == nil && s > 0 {
		return []int64{s}
	}
	var out []int64
	for s := int64(2); s <= 1<<23; s *= 2 {
		out = append(out, s)
	}
	return out
}

// perftestBWRows is the table of a bandwidth client over a link of gbps, with --report_gbits.
func perftestBWRows(gbps float64, cmd string) string {
	qps, _ := strconv.Atoi(argOf(cmd, "-q", "1"))
	qps = max(qps, 1)
	var b strings.Builder
	for _, size := range perftestSizes(cmd) {
		// The message rate bounds small sizes, the link large ones; in between both cost time
		// (harmonic sum), so the curve bends over 4-64 KiB as measured ones do.
		small := float64(size) * 8 * perftestMpps * float64(min(qps, 4)) / 1000
		avg := 1 / (1/small + 1/(gbps*perftestEfficiency))
		peak := avg * 1.003
		rate := avg * 125 / float64(size) // Gb/s -> millions of messages per second
		fmt.Fprintf(&b, " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n", size, 5000, peak, avg, rate)
	}
	return strings.TrimRight(b.String(), "\n")
}

// perftestLatRows is the table of ib_write_lat over a link of gbps.
func perftestLatRows(gbps float64, cmd string) string {
	var b strings.Builder
	for _, size := range perftestSizes(cmd) {
		wire := float64(size) * 8 / (gbps * 1000) // microseconds on the wire
		typ := perftestBaseLatUs + wire
		fmt.Fprintf(&b, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
			size, 1000, typ-0.10, typ*6.9, typ, typ+0.05, 0.21, typ+0.23, typ*5.5)
	}
	return strings.TrimRight(b.String(), "\n")
}
