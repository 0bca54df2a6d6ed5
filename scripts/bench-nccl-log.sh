#!/usr/bin/env bash
# Compares `ain doctor nccl-log` with `grep -c NET/` on the same generated multi-rank NCCL INFO log
# (16 ranks), on this machine, in one run. Two shapes of log:
#
#   coll     NCCL_DEBUG_SUBSYS with COLL and TUNING: for every collective call the line of
#            NVIDIA/nccl src/enqueue.cc "AllReduce: opCount 1a sendbuff 0x7f.. recvbuff 0x7f..
#            count N datatype 7 op 0 root 0 comm 0x55.. [nranks=16] stream 0x55.." (opCount,
#            buffers and count change on every line) and its TUNING line (issue 32; the default)
#   tuning   the same without COLL: Channel/AllReduce TUNING lines dominating (issue 16)
#
#   scripts/bench-nccl-log.sh [SIZE_MIB] [RUNS] [SHAPE]   defaults: 512 MiB, 5 paired runs, coll
#   AIN_BIN=/path/to/ain scripts/bench-nccl-log.sh  times another build (e.g. before a change)
#   AIN_BENCH_LOG=FILE scripts/bench-nccl-log.sh    reuses a log written by TestWriteSyntheticLog
#                                                   (SHAPE then only labels the output)
#
# Prints each tool's median wall time (the clock around GNU time, which gives CPU time and peak
# RSS; without GNU time, the clock alone),
# the median of the per-round ratios ain/grep (each round times grep then ain back to back, so a
# change of load between rounds cancels out) and the load average. The log is written under
# ${TMPDIR:-/tmp} and removed at the end.
#
# The ain binary is copied, not linked in place: a binary just written by the Go linker maps with
# about 15 MiB more resident text on this kernel (page-cache layout, not the program; `ain
# version` 51 MiB freshly linked, 37 MiB once copied), which would hide the analyser's memory.
set -euo pipefail
size=${1:-512}
runs=${2:-5}
shape=${3:-coll}
case $shape in coll | tuning) ;; *)
	echo "unknown shape $shape (coll or tuning)" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ain-bench-nccl-log.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/nccl.log

echo "building ain and writing a ${size} MiB 16-rank log ($shape shape) to $log" >&2
if [ -n "${AIN_BIN:-}" ]; then cp "$AIN_BIN" "$work/ain"; else (cd "$root" && go build -o "$work/ain.linked" ./cmd/ain) && cp "$work/ain.linked" "$work/ain"; fi
if [ -n "${AIN_BENCH_LOG:-}" ]; then # a log written before (same generator): not removed
	log=$AIN_BENCH_LOG
	size=$(($(stat -c %s "$log") >> 20))
else
	(cd "$root" && AIN_GEN_LOG="$log" AIN_GEN_LOG_MB="$size" AIN_GEN_LOG_SHAPE="$shape" go test -count=1 -run '^TestWriteSyntheticLog$' ./pkg/nccl >/dev/null)
fi
cat "$log" >/dev/null # warm the page cache for both tools

timeit() { # prints "wall_seconds max_rss_kib cpu_seconds" for the command
	if /usr/bin/time -f '%e %M' true 2>/dev/null; then
		# Output to a file, not /dev/null: GNU grep stops at the first match when its output is /dev/null.
		# Wall time from the clock around it (GNU time's %e has 10 ms steps, a sixth of grep's time).
		local s e
		s=$(date +%s%N)
		/usr/bin/time -f '%M %U %S' -o "$work/t" "$@" >"$work/out" 2>&1 || true
		e=$(date +%s%N)
		awk -v w="$(((e - s) / 1000))" '{print w / 1e6, $1, $2 + $3}' "$work/t"
	else
		local s e
		s=$(date +%s.%N)
		"$@" >"$work/out" 2>&1 || true
		e=$(date +%s.%N)
		echo "$(echo "$e - $s" | bc) 0 0"
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

: >"$work/ain.txt"
: >"$work/grep.txt"
: >"$work/ratio.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$runs"); do # paired: each run times grep then ain back to back
	g=$(timeit grep -c NET/ "$log")
	a=$(timeit "$work/ain" doctor nccl-log -o json "$log")
	echo "$g" >>"$work/grep.txt"
	echo "$a" >>"$work/ain.txt"
	echo "${a%% *} ${g%% *}" | awk '$2 > 0 {print $1 / $2}' >>"$work/ratio.txt"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
gw=$(cut -d' ' -f1 "$work/grep.txt" | median)
aw=$(cut -d' ' -f1 "$work/ain.txt" | median)
gc=$(cut -d' ' -f3 "$work/grep.txt" | median)
ac=$(cut -d' ' -f3 "$work/ain.txt" | median)
gm=$(cut -d' ' -f2 "$work/grep.txt" | sort -g | tail -1)
am=$(cut -d' ' -f2 "$work/ain.txt" | sort -g | tail -1)
ratio=$(median <"$work/ratio.txt")
lines=$(wc -l <"$log")
verdict=$("$work/ain" doctor nccl-log "$log" | head -1 || true)
printf 'log: %s MiB, %s shape, %s lines (%s COLL); %s CPU(s); load average %s before, %s after\n' "$size" "$shape" "$lines" "$(grep -c ': opCount ' "$log" || true)" "$(nproc)" "$load0" "$load1"
printf 'grep -c NET/          median wall %6.3f s   CPU %5.2f s   peak RSS %6.1f MiB\n' "$gw" "$gc" "$(echo "$gm/1024" | bc -l)"
printf 'ain doctor nccl-log   median wall %6.3f s   CPU %5.2f s   peak RSS %6.1f MiB\n' "$aw" "$ac" "$(echo "$am/1024" | bc -l)"
printf 'ratio ain/grep (wall): median of %d paired ratios %.2fx (ratio of medians %.2fx); per round: %s\n' "$runs" "$ratio" "$(echo "$aw/$gw" | bc -l)" "$(sort -g "$work/ratio.txt" | awk '{printf "%.2f ", $1}')"
printf 'verdict: %s\n' "$verdict"
