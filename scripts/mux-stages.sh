#!/bin/sh
# What each stage of the mux costs (issue 27), by ablation: for each stage,
# a copy of bpf/ with that stage replaced by a constant is compiled as a
# benchmark build and measured against this build in the same process
# (`beamer bench dataplane --compare`, on the same maps, in alternation).
# The difference is what the stage costs on each row. Writes
# docs/mux-stages.md. Needs root, clang and python3 (scripts/apt-packages.txt);
# takes a few minutes. Arguments go to every `beamer bench dataplane` run
# (e.g. --trials 5 for a quicker, noisier table).
#
# The ablated builds are for measuring only: they forward to a fixed server,
# skip counters or a cache, and are never loaded anywhere else. Each
# replacement names the source text it replaces and fails loudly when the
# source has changed (python's assert), so the table never measures
# something other than it says.
set -eu
cd "$(dirname "$0")/.."
work="$(mktemp -d "${TMPDIR:-/tmp}/mux-stages.XXXXXX")"
trap 'rm -rf "$work"' EXIT
make generate >/dev/null
go build -buildvcs=auto -o "$work/beamer" ./cmd/beamer

cp -r bpf "$work/src"
python3 scripts/mux-stages.py ablate "$work/src"

for stage in nexthop counters capture bucket bucket-helper hash vip; do
	flag=$(echo "$stage" | tr a-z- A-Z_)
	clang -mcpu=v3 -O2 -g -Wall -Werror -DBEAMER_BENCH "-DSTAGE_OFF_$flag" \
		-I/usr/include/x86_64-linux-gnu -target bpfel -c "$work/src/mux.c" -o "$work/$stage.o"
	echo "measuring without: $stage" >&2
	"$work/beamer" bench dataplane --no-live --beamer-only --json --compare "$work/$stage.o" "$@" >"$work/$stage.json"
done
python3 scripts/mux-stages.py table "$work" nexthop counters capture bucket bucket-helper hash vip >docs/mux-stages.md
echo "wrote docs/mux-stages.md" >&2
