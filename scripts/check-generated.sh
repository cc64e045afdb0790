#!/usr/bin/env bash
# Checks that the committed eBPF objects and Go bindings
# (pkg/dataplane/*_bpfel.{o,go}, and the benchmark builds'
# research/bench/dpbench/*_bpfel.{o,go}) are exactly what `go generate`
# makes from bpf/ now: clang's output is deterministic (same bytes in any
# directory, checked when this was written), so any difference means bpf/
# changed without `make generate` and a commit of its output.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
bad=()
for dir in pkg/dataplane research/bench/dpbench; do
	mkdir -p "$saved/$dir"
	cp "$dir"/*_bpfel.o "$dir"/*_bpfel.go "$saved/$dir"/
	(cd "$dir" && "$GO" generate ./...)
	for f in "$saved/$dir"/*; do
		cmp -s "$f" "$dir/$(basename "$f")" || bad+=("$dir/$(basename "$f")")
	done
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "check-generated: ${bad[*]} differ from what bpf/ compiles to now: run make generate and commit them" >&2
	exit 1
fi
echo "check-generated: committed eBPF objects and bindings match bpf/"

# The management API's Go code (pkg/controlplane/mgmtapi/mgmtv1) is what its schema
# generates (scripts/gen-mgmtapi.sh: protoc from Debian, the Go plugins at
# pinned versions).
cp pkg/controlplane/mgmtapi/mgmtv1/*.go "$saved"/
GO=$GO scripts/gen-mgmtapi.sh
bad=()
for f in pkg/controlplane/mgmtapi/mgmtv1/*.go; do
	cmp -s "$f" "$saved/$(basename "$f")" || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "check-generated: ${bad[*]} differ from what pkg/controlplane/mgmtapi/proto generates now: run scripts/gen-mgmtapi.sh and commit them" >&2
	exit 1
fi
echo "check-generated: committed management API code matches its schema"
