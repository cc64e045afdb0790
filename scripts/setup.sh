#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, test and run Beamer:
# the Debian packages in scripts/apt-packages.txt (clang and libbpf for the
# eBPF programs, iproute2 and ethtool for the namespace lab, etcd and
# ZooKeeper servers for the store tests) and the Go modules. Safe to run again:
# it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null; then sudo "$@"; else
			echo "setup: installing packages needs root (run as root or install sudo)" >&2
			exit 1
		fi
	else
		"$@"
	fi
}

missing=()
while read -r pkg; do
	pkg=${pkg%%#*}
	pkg=${pkg//[[:space:]]/}
	[ -n "$pkg" ] || continue
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$pkg")
	fi
done < scripts/apt-packages.txt

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	need_root apt-get update -qq
	need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
	echo "setup: Go is not installed; install Go $(sed -n 's/^go //p' go.mod) or newer" >&2
	exit 1
fi
go mod download
# make deb's packager (packaging/nfpm/go.mod): then it builds offline.
go -C packaging/nfpm mod download
echo "setup: ready ($(go version | cut -d' ' -f3), $(clang --version | head -1))"
