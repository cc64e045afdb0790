#!/bin/sh
# What each stage of the mux costs (issue 27), by ablation: for each stage,
# a copy of bpf/ with that stage replaced by a constant is compiled as a
# benchmark build and measured against this build in the same process
# (`beamer-lab bench dataplane --compare`, on the same maps, in alternation).
# The difference is what the stage costs on each row. Writes
# docs/mux-stages.md. Needs root, clang and python3 (scripts/apt-packages.txt);
# takes a few minutes. Arguments go to every `beamer-lab bench dataplane` run
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
go build -buildvcs=auto -o "$work/beamer-lab" ./cmd/beamer-lab

cp -r bpf "$work/src"
python3 scripts/mux-stages.py ablate "$work/src"

# "all": every stage but helpers off at once — what the path costs
# without all of them, the most that work on these stages could buy.
for stage in nexthop counters capture bucket helpers hash vip all; do
	if [ "$stage" = all ]; then
		flags="-DSTAGE_OFF_NEXTHOP -DSTAGE_OFF_COUNTERS -DSTAGE_OFF_CAPTURE -DSTAGE_OFF_BUCKET -DSTAGE_OFF_HASH -DSTAGE_OFF_VIP"
	else
		flags="-DSTAGE_OFF_$(echo "$stage" | tr a-z- A-Z_)"
	fi
	# shellcheck disable=SC2086 # flags is a list
	clang -mcpu=v3 -O2 -g -Wall -Werror -DBEAMER_BENCH $flags \
		-I/usr/include/x86_64-linux-gnu -target bpfel -c "$work/src/bench/mux_bench.c" -o "$work/$stage.o"
	echo "measuring without: $stage" >&2
	"$work/beamer-lab" bench dataplane --no-live --beamer-only --json --compare "$work/$stage.o" "$@" >"$work/$stage.json"
done
python3 scripts/mux-stages.py table "$work" nexthop counters capture bucket helpers hash vip all >docs/mux-stages.md
echo "wrote docs/mux-stages.md" >&2
