#!/bin/sh
# Regenerates docs/performance.md from one run of every benchmark
# (`beamer bench doc`): the machine, the data plane (batched and per-packet
# methods), live traffic and the control plane. Needs root; takes minutes.
# Arguments go to `beamer bench doc` (e.g. --control-plane-args "--store etcd").
set -eu
cd "$(dirname "$0")/.."
bin="${TMPDIR:-/tmp}/perf-doc-beamer.$$"
trap 'rm -f "$bin"' EXIT
make generate >/dev/null
# -buildvcs=auto: the document names its commit even where GOFLAGS turns VCS stamping off.
go build -buildvcs=auto -o "$bin" ./cmd/beamer
"$bin" bench doc --out docs/performance.md --template scripts/perf-doc.md.tmpl "$@"
echo "wrote docs/performance.md" >&2
