#!/usr/bin/env bash
# Installs the Debian packages whose programs ain's tests run for real (what the pods of a real
# cluster run: OpenSSH's sshd and ssh, Open MPI's mpirun and orted, torchrun; iproute2 and util-linux for
# network and mount namespaces), when any is missing. Run as root; otherwise it prints the one
# command to run.
# Idempotent and quiet when everything is there, so the README's test command and CI call it
# on every run.
set -euo pipefail

# program -> the Debian package that provides it
declare -A want=(
	[sshd]=openssh-server
	[ssh]=openssh-client
	[ssh-keygen]=openssh-client
	[mpirun]=openmpi-bin
	[mpicc]=libopenmpi-dev
	[ip]=iproute2
	[unshare]=util-linux
	[orted]=openmpi-bin
	# pkg/sandbox/podrun builds each pod's namespaces and root with these
	[nsenter]=util-linux
	[setpriv]=util-linux
	[pivot_root]=util-linux
	[mount]=mount
	[hostname]=hostname
	# the training image's torchrun (gloo backend) for the real-pod mode: python3-torch
	# 1.13.1+dfsg-4 on bookworm pulls 178 packages, 648 MB, installed in 1m23s here.
	[torchrun]=python3-torch
)

missing=()
for prog in "${!want[@]}"; do
	if ! command -v "$prog" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$prog" ]; then
		missing+=("${want[$prog]}")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t pkgs < <(printf '%s\n' "${missing[@]}" | sort -u)
cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${pkgs[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "ain's tests run real programs from Debian packages that are missing here; as root, run:" >&2
	echo "  $cmd" >&2
	exit 1
fi
echo "installing Debian packages: ${pkgs[*]}" >&2
start=$(date +%s)
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "installed in $(( $(date +%s) - start ))s" >&2
