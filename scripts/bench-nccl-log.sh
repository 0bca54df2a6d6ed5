#!/usr/bin/env bash
# Compares `ain doctor nccl-log` with `grep -c NET/` on the same generated multi-rank NCCL INFO log
# (16 ranks, Channel/AllReduce TUNING lines dominating, as in issue 16), on this machine, in one run.
#
#   scripts/bench-nccl-log.sh [SIZE_MIB] [RUNS]     defaults: 512 MiB, 5 paired runs
#   AIN_BIN=/path/to/ain scripts/bench-nccl-log.sh  times another build (e.g. before a change)
#
# Prints each tool's median wall time and peak RSS (GNU time or /proc-based fallback) and the ratio
# ain/grep. The log is written under ${TMPDIR:-/tmp} and removed at the end.
set -euo pipefail
size=${1:-512}
runs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ain-bench-nccl-log.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/nccl.log

echo "building ain and writing a ${size} MiB 16-rank log to $log" >&2
if [ -n "${AIN_BIN:-}" ]; then cp "$AIN_BIN" "$work/ain"; else (cd "$root" && go build -o "$work/ain" ./cmd/ain); fi
(cd "$root" && AIN_GEN_LOG="$log" AIN_GEN_LOG_MB="$size" go test -count=1 -run '^TestWriteSyntheticLog$' ./pkg/nccl >/dev/null)
cat "$log" >/dev/null # warm the page cache for both tools

timeit() { # prints "wall_seconds max_rss_kib" for the command
	if /usr/bin/time -f '%e %M' true 2>/dev/null; then
		# Output to a file, not /dev/null: GNU grep stops at the first match when its output is /dev/null.
		/usr/bin/time -f '%e %M' -o "$work/t" "$@" >"$work/out" 2>&1 || true
		cat "$work/t"
	else
		local s e
		s=$(date +%s.%N)
		"$@" >"$work/out" 2>&1 || true
		e=$(date +%s.%N)
		echo "$(echo "$e - $s" | bc) 0"
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

: >"$work/ain.txt"
: >"$work/grep.txt"
for i in $(seq "$runs"); do # paired: each run times grep then ain back to back
	timeit grep -c NET/ "$log" >>"$work/grep.txt"
	timeit "$work/ain" doctor nccl-log -o json "$log" >>"$work/ain.txt"
done
gw=$(cut -d' ' -f1 "$work/grep.txt" | median)
aw=$(cut -d' ' -f1 "$work/ain.txt" | median)
gm=$(cut -d' ' -f2 "$work/grep.txt" | sort -g | tail -1)
am=$(cut -d' ' -f2 "$work/ain.txt" | sort -g | tail -1)
lines=$(wc -l <"$log")
verdict=$("$work/ain" doctor nccl-log "$log" | head -1 || true)
printf 'log: %s MiB, %s lines, %s CPU(s)\n' "$size" "$lines" "$(nproc)"
printf 'grep -c NET/          median wall %6.2f s   peak RSS %6.1f MiB\n' "$gw" "$(echo "$gm/1024" | bc -l)"
printf 'ain doctor nccl-log   median wall %6.2f s   peak RSS %6.1f MiB\n' "$aw" "$(echo "$am/1024" | bc -l)"
printf 'ratio ain/grep (wall): %.2fx   (%d paired runs)\n' "$(echo "$aw/$gw" | bc -l)" "$runs"
printf 'verdict: %s\n' "$verdict"
