#!/bin/sh
# Regenerates docs/performance.md from one run of every benchmark
# (`beamer-lab bench doc`): the machine, the data plane (batched and per-packet
# methods), live traffic and the control plane. Needs root; takes minutes.
# Arguments go to `beamer-lab bench doc` (e.g. --control-plane-args "--store etcd").
set -eu
cd "$(dirname "$0")/.."
bin="$(mktemp -d "${TMPDIR:-/tmp}/perf-doc.XXXXXX")"
trap 'rm -rf "$bin"' EXIT
make generate >/dev/null
# -buildvcs=auto: the document names its commit even where GOFLAGS turns VCS stamping off.
# beamer-lab runs the benchmarks; the control-plane one starts the beamer beside it as its controller.
go build -buildvcs=auto -o "$bin/beamer" ./cmd/beamer
go build -buildvcs=auto -o "$bin/beamer-lab" ./cmd/beamer-lab
"$bin/beamer-lab" bench doc --out docs/performance.md --template scripts/perf-doc.md.tmpl "$@"
echo "wrote docs/performance.md" >&2
