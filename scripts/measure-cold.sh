#!/usr/bin/env bash
# Measures a first run on this machine as a fresh machine would see it (issue 32): a clean clone of
# this repo's HEAD and empty Go build and module caches, sandbox binary cache and state, all under
# one temporary folder (module downloads from GOPROXY included). Three targets:
#
#   scripts/measure-cold.sh demo    the README's first command: go build -o bin/ain ./cmd/ain && bin/ain demo
#   scripts/measure-cold.sh build   go build, then `ain sandbox build` (every component of both stacks)
#   scripts/measure-cold.sh ci      .ci/run (the README's test command)
#
# Prints the wall time of each step, each sandbox component's build time (from the build's own
# "built in" lines), the load average before and after, and keeps the full output in
# $COLD_DIR/out.log (default COLD_DIR: a new folder under ${TMPDIR:-/tmp}; removed at the end
# unless COLD_KEEP=1). Debian packages are not removed: scripts/debian-packages.sh times itself.
# Nothing else should run on the machine meanwhile, least of all another sandbox (one sandbox per
# machine runs real pods).
set -euo pipefail
target=${1:-demo}
case $target in demo | build | ci) ;; *)
	echo "usage: $0 demo|build|ci" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cold=${COLD_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ain-cold.XXXXXX")}
mkdir -p "$cold"
cleanup() {
	if [ "${COLD_KEEP:-}" != 1 ]; then
		chmod -R u+w "$cold" 2>/dev/null || true # the module cache is read-only
		rm -rf "$cold"
	fi
}
trap cleanup EXIT

git clone -q "$root" "$cold/ain"
export GOCACHE=$cold/gocache GOMODCACHE=$cold/gomod XDG_CACHE_HOME=$cold/xdg-cache \
	XDG_STATE_HOME=$cold/xdg-state AIN_SANDBOX_CACHE=$cold/sandbox-bin
unset AIN_SANDBOX_STATE
log=$cold/out.log
cd "$cold/ain"
echo "cold $target at $(git rev-parse --short HEAD) in $cold; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

step() { # step NAME CMD...: runs CMD, appends its output to the log, prints its wall time
	local name=$1 s e rc=0
	shift
	s=$(date +%s)
	"$@" >>"$log" 2>&1 || rc=$?
	e=$(date +%s)
	printf '%-28s %4dm%02ds  rc=%d\n' "$name" $(((e - s) / 60)) $(((e - s) % 60)) "$rc"
	return "$rc"
}

total_s=$(date +%s)
rc=0
case $target in
demo)
	step "go build ./cmd/ain" go build -o bin/ain ./cmd/ain || rc=$?
	[ "$rc" -ne 0 ] || step "ain demo" bin/ain demo || rc=$?
	;;
build)
	step "go build ./cmd/ain" go build -o bin/ain ./cmd/ain || rc=$?
	[ "$rc" -ne 0 ] || step "ain sandbox build" bin/ain sandbox build || rc=$?
	;;
ci)
	step ".ci/run" .ci/run || rc=$?
	;;
esac
total_e=$(date +%s)
printf '%-28s %4dm%02ds\n' "total" $(((total_e - total_s) / 60)) $(((total_e - total_s) % 60))
echo "sandbox components (the build's own figures):"
if grep -qE '^\s+\[[0-9]+/[0-9]+\] .* built in ' "$log"; then
	grep -E '^\s+\[[0-9]+/[0-9]+\] .* built in ' "$log" | sed -E 's/^\s+\[[0-9]+\/[0-9]+\] /  /'
else # the demo draws a progress line instead: when each component was first seen building
	grep -oE 'building [a-z-]+, [0-9hms]+ elapsed' "$log" | awk '{c = $2; sub(/,$/, "", c)} !seen[c]++ {print "  " c " started by " $3}' || echo "  (none built)"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); output: $log"
exit "$rc"
