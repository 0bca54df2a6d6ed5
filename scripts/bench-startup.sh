#!/usr/bin/env bash
# Start-up of ain's offline commands (issue 16): package init from GODEBUG=inittrace=1, grouped
# by origin, then median wall time and peak RSS of `ain render qlora -o yaml`, `ain doctor
# nccl-log`, `ain bench model`, `ain version`, a hello-world Go binary (the floor of any Go
# process) and, when `helm` is on PATH (or HELM=...), `helm template` of a chart whose one template
# is the same manifests ain renders: the ratio the issue asks for.
#
#   scripts/bench-startup.sh [RUNS]              default 30 runs per command (hyperfine if installed)
#   AIN_BIN=/path/to/ain scripts/bench-startup.sh   times another build (e.g. before a change)
#
# Figures are printed, not asserted: on a shared machine the wall times move with the load, so
# compare rows of one run with each other. The in-process work of the same commands (after init)
# is `go test -bench OfflineCommand ./cmd/ain`.
set -euo pipefail
runs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ain-bench-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Copied, not run where the linker wrote it: a freshly linked binary maps about 15 MiB more
# resident text on this kernel (page-cache layout), which would skew the RSS column.
if [ -n "${AIN_BIN:-}" ]; then cp "$AIN_BIN" "$work/ain"; else (cd "$root" && go build -o "$work/ain.linked" ./cmd/ain) && cp "$work/ain.linked" "$work/ain"; fi
ain=$work/ain
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hi") }\n' >"$work/hello.go"
(cd "$work" && GO111MODULE=off go build -o hello hello.go)
log=$root/../shared/corpus/nccl-log/awsome-fsdp-p5-aws-ofi-nccl-init-lines.log
[ -f "$log" ] || { log=$work/nccl.log; printf 'host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE\n' >"$log"; }
cd "$work"

echo "== package init (GODEBUG=inittrace=1, ain render qlora -o yaml; clock is the median of 5)"
for i in 1 2 3 4 5; do GODEBUG=inittrace=1 "$ain" render qlora -o yaml 2>&1 >/dev/null | grep '^init ' >"init.$i" || true; done
printf "%-34s %5s %10s %10s %8s\n" group pkgs "clock ms" bytes allocs
for i in 1 2 3 4 5; do
	awk '{p=$2; g="other third-party"
		if (p ~ /^k8s\.io\/client-go\//) g="k8s.io/client-go"
		else if (p ~ /^(k8s\.io|sigs\.k8s\.io)\//) g="k8s api/apimachinery/sigs.k8s.io"
		else if (p ~ /ain-hpc\/ain/) g="ain (own packages)"
		else if (p ~ /gonum|go-latex|go-fonts|golang\.org\/x\/image|go-pdf|ajstarks/) g="plot (gonum, fonts)"
		else if (p ~ /protobuf|gnostic/) g="protobuf/gnostic"
		else if (p !~ /\./) g="standard library"
		c[g]+=$5; b[g]+=$8; a[g]+=$10; n[g]++; C+=$5; B+=$8; A+=$10; N++}
		END {for (g in c) printf "%s\t%d\t%.2f\t%d\t%d\n", g, n[g], c[g], b[g], a[g]
			printf "TOTAL\t%d\t%.2f\t%d\t%d\n", N, C, B, A}' "init.$i"
done | sort -t$'\t' -k1,1 -k3,3g | awk -F'\t' '{k=$1; i[k]++; n[k]=$2; b[k]=$4; a[k]=$5; if (i[k]==3) cl[k]=$3}
	END {
		for (k in n) printf "%-34s %5d %10.2f %10d %8d\n", k, n[k], cl[k], b[k], a[k] }' | sort -k1,1
echo "top 8 single inits by bytes:"
sort -t' ' -k8 -rn init.1 | head -8 | awk '{printf "  %-60s %7s ms %9s B %6s allocs\n", $2, $5, $8, $10}'

cmds=("./hello" "$ain version" "$ain render qlora -o yaml" "$ain doctor nccl-log $log" "$ain bench model --nodes 3 --gpus-per-node 8 --link 400Gb")
if helm=${HELM:-$(command -v helm)} && [ -n "$helm" ]; then
	mkdir -p chart/templates
	printf 'apiVersion: v2\nname: qlora\nversion: 0.1.0\n' >chart/Chart.yaml
	"$ain" render qlora -o yaml >chart/templates/qlora.yaml
	cmds+=("$helm template qlora ./chart")
fi

echo "== wall time and peak RSS ($runs runs each, median; load average $(cut -d' ' -f1-3 /proc/loadavg))"
rss() { /usr/bin/time -f '%M' -o rss.txt "$@" >/dev/null 2>&1 || true; cat rss.txt 2>/dev/null || echo '?'; }
declare -A med
for c in "${cmds[@]}"; do
	if command -v hyperfine >/dev/null; then
		hyperfine -N -w 3 -r "$runs" --export-json h.json "$c" >/dev/null 2>&1
		m=$(python3 -c 'import json;r=json.load(open("h.json"))["results"][0];print("%.1f %.1f %.1f"%(r["median"]*1e3,r["user"]*1e3,r["system"]*1e3))')
	else
		for i in $(seq "$runs"); do s=$(date +%s%N); $c >/dev/null 2>&1 || true; echo $(( ($(date +%s%N) - s) / 1000 )); done |
			sort -n | awk '{a[NR]=$1} END {printf "%.1f ? ?", a[int((NR+1)/2)]/1000}' >m.txt
		m=$(cat m.txt)
	fi
	med[$c]=${m%% *}
	if command -v /usr/bin/time >/dev/null; then r=$(rss $c); else r='?'; fi
	printf '%-70s median %7s ms  user %6s ms  sys %6s ms  peak RSS %s KiB\n' "${c#"$work"/}" $m "$r"
done
if [ -n "${helm:-}" ]; then
	h=${med["$helm template qlora ./chart"]}
	r=${med["$ain render qlora -o yaml"]}
	echo "ratio ain render / helm template (median wall): $(awk -v a="$r" -v b="$h" 'BEGIN{printf "%.2f", a/b}')x"
	for c in "${cmds[@]}"; do
		case $c in "$ain "*) printf '  %-62s %sx helm (target < 1x)\n' "${c#"$work"/}" "$(awk -v a="${med[$c]}" -v b="$h" 'BEGIN{printf "%.2f", a/b}')" ;; esac
	done
else
	echo "no helm on PATH: no ratio (go install helm.sh/helm/v3/cmd/helm@v3.16.3, or HELM=...)"
fi
