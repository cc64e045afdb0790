#!/usr/bin/env bash
# Checks that the committed eBPF objects and Go bindings
# (pkg/dataplane/*_bpfel.{o,go}) are exactly what `go generate` makes from
# bpf/ now: clang's output is deterministic (same bytes in any directory,
# checked when this was written), so any difference means bpf/ changed
# without `make generate` and a commit of its output.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
cp pkg/dataplane/*_bpfel.o pkg/dataplane/*_bpfel.go "$saved"/
(cd pkg/dataplane && "$GO" generate ./...)
bad=()
for f in "$saved"/*; do
	cmp -s "$f" "pkg/dataplane/$(basename "$f")" || bad+=("pkg/dataplane/$(basename "$f")")
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "check-generated: ${bad[*]} differ from what bpf/ compiles to now: run make generate and commit them" >&2
	exit 1
fi
echo "check-generated: committed eBPF objects and bindings match bpf/"
