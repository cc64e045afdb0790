#!/bin/sh
# Regenerates the simulated figures of docs/strategy-cheetah.md and
# docs/strategy-awfd.md from one run of each simulation, so the documents
# cannot drift from the code:
#   cheetah: `sim cheetah --json --seed 1` (PCC violations of the published
#            Beamer, this product's Beamer, Maglev and Cheetah; load
#            imbalance) -> docs/img/cheetah-sim.json; a few minutes;
#   awfd:    `sim awfd --json --seeds 3 --plot docs/img` (Spotlight's Fig. 8
#            and Fig. 10) -> docs/img/awfd-sim.json and the two SVGs;
#            under a minute.
# The tables and the sentences read from them stand between
# <!-- NAME:begin --> and <!-- NAME:end --> lines; they are rendered from
# the JSON by the packages' TestDocFigures with -update, and the same
# tests (in CI, without -update) fail when a document and its JSON differ.
# Usage: scripts/sim-doc.sh [cheetah|awfd|all]   (default: all)
set -eu
cd "$(dirname "$0")/.."
what=${1:-all}
case $what in
cheetah | awfd | all) ;;
*)
	echo "usage: $0 [cheetah|awfd|all]" >&2
	exit 2
	;;
esac
cmd=./cmd/beamer-lab # the simulations are the research wing's
bin="${TMPDIR:-/tmp}/sim-doc.$$"
trap 'rm -f "$bin" "$bin.json"' EXIT
go build -o "$bin" "$cmd"
pkgs=
if [ "$what" != awfd ]; then
	"$bin" sim cheetah --json --seed 1 >"$bin.json"
	mv "$bin.json" docs/img/cheetah-sim.json
	pkgs="$pkgs ./research/sim/cheetahsim"
fi
if [ "$what" != cheetah ]; then
	"$bin" sim awfd --json --seeds 3 --plot docs/img >"$bin.json"
	mv "$bin.json" docs/img/awfd-sim.json
	pkgs="$pkgs ./research/sim/awfdsim"
fi
# shellcheck disable=SC2086 # $pkgs is a list of packages
go test -count=1 -timeout 300s -run '^TestDocFigures$' $pkgs -args -update
echo "sim-doc: wrote the figures of docs/strategy-cheetah.md and docs/strategy-awfd.md ($what)" >&2
