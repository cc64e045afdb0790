#!/bin/sh
# Builds the baseline that measures the mux's traffic counters per VIP and
# per server (bpf/include/vip_traffic.h) alone: the mux's benchmark build
# of the commit before them, with only the VIP record's `stats` field added
# so that its maps are laid out as the current build's (bench dataplane
# --compare refuses a baseline whose maps differ). Usage:
#
#   scripts/vip-traffic-baseline.sh /tmp/base.o
#   beamer-lab bench dataplane --no-live --compare /tmp/base.o
set -eu
out=${1:?usage: $0 OUTPUT.o}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")/.."
before=bb199ed # the last commit without the counters
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git archive "$before" bpf | tar -x -C "$dir"
sed -i 's|^\t__u16 gue_port;   /\* GUE: UDP destination port, host order \*/$|&\n\t__u16 stats;      /* baseline: the field alone, unused */|' "$dir/bpf/include/mux_maps.h"
grep -q '__u16 stats;' "$dir/bpf/include/mux_maps.h" || { echo "$0: could not add the stats field" >&2; exit 1; }
clang -mcpu=v3 -O2 -g -Wall -Werror -DBEAMER_BENCH -I/usr/include/x86_64-linux-gnu -target bpfel \
	-c "$dir/bpf/mux.c" -o "$out"
echo "wrote $out" >&2
