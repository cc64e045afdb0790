#!/bin/sh
# Prints the include graph of the eBPF sources (bpf/) as DOT: one edge per
# #include "..." line, paths relative to bpf/. The graph has no circle and
# every include is at the top of its file (pkg/dataplane
# TestBPFIncludesAtTopWithoutCircle checks both). Usage:
#
#   scripts/include-graph.sh > /tmp/includes.dot
set -eu
cd "$(dirname "$0")/../bpf"
echo "digraph bpf_includes {"
find . -name '*.[ch]' | sort | while read -r f; do
	dir=$(dirname "$f")
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
		to=$(realpath -m --relative-to=. "$dir/$inc")
		echo "	\"${f#./}\" -> \"$to\";"
	done
done
echo "}"
