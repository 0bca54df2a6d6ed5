#!/usr/bin/env bash
# TTFT and ITL accuracy of `ain bench serve` next to a bare go-openai streaming loop, both against
# one simulated server (a child process that records when it flushed every chunk), at STREAMS
# concurrent streams: BenchmarkTimingAinVsBareLoop (pkg/servebench/timing_test.go) run RUNS
# times, each run measuring both clients one after the other. Prints every run, then the median
# over the runs of each figure and of ain's p99 TTFT error divided by the bare loop's in the same
# run (below 1: ain's TTFT is the more accurate).
#
#   scripts/bench-ttft.sh [RUNS] [STREAMS]          default 12 runs at 256 streams
#   AIN_TEST_BIN=/path/servebench.test scripts/bench-ttft.sh   another build (go test -c ./pkg/servebench)
#
# Figures are printed, not asserted: both clients' errors move with the machine's load, so compare
# the columns of one invocation, not invocations made at different times.
set -euo pipefail
runs=${1:-12}
streams=${2:-256}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ain-bench-ttft.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=${AIN_TEST_BIN:-}
if [ -z "$bin" ]; then
	(cd "$root" && go test -c -o "$work/servebench.test" ./pkg/servebench)
	bin=$work/servebench.test
fi
# The benchmark's child server is the test binary re-executed; run it where its sources are.
cd "$root/pkg/servebench"
"$bin" -test.run '^$' -test.bench "TimingAinVsBareLoop/streams=${streams}\$" -test.benchtime 1x -test.count "$runs" 2>&1 |
	grep "streams=${streams}  ain:" | sed 's/^.*streams=/streams=/' | tee "$work/runs"
# A line: streams=256  ain: TTFT err p50 A µs p99 B µs, ITL err p50 C µs p99 D µs | bare go-openai: TTFT err p50 E µs p99 F µs, ITL err p50 G µs p99 H µs
awk -v runs="$runs" '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		n++; k = 0
		for (i = 1; i <= NF; i++) if ($i ~ /^p(50|99)$/) v[++k] = $(i + 1)
		for (c = 1; c <= 8; c++) col[c, n] = v[c]
		ratio[n] = v[6] > 0 ? v[2] / v[6] : 0
	}
	END {
		if (n == 0) { print "no run finished"; exit 1 }
		split("ain TTFT err p50,ain TTFT err p99,ain ITL err p50,ain ITL err p99,bare TTFT err p50,bare TTFT err p99,bare ITL err p50,bare ITL err p99", name, ",")
		printf "\nmedian of %d runs (µs):\n", n
		for (c = 1; c <= 8; c++) { for (r = 1; r <= n; r++) x[r] = col[c, r]; printf "  %-20s %8.0f\n", name[c], median(x, n) }
		printf "  ain/bare TTFT p99 (median of the per-run ratios): %.2f\n", median(ratio, n)
	}' "$work/runs"
