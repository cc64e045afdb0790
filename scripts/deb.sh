#!/usr/bin/env bash
# Builds dist/beamer_VERSION_amd64.deb with nfpm, a Go module pinned in
# packaging/nfpm/go.mod (no download of a prebuilt binary, and offline once
# `make setup` has filled the module cache): the binary built as VERSION
# (scripts/version.sh, also what `beamer version` prints), the systemd units,
# /etc/default files, the maintainer scripts, man pages and shell completions
# generated from the commands, the example configurations (as conffiles), the
# dashboard, licences and changelog.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export VERSION=${VERSION:-$(scripts/version.sh)}
# Man pages dated by the commit, not the build (reproducible builds).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p bin dist
"$GO" build -ldflags "-X github.com/beamer-lb/beamer/cmd/internal/beamercli.version=${VERSION}" -o bin/beamer ./cmd/beamer
"$GO" -C packaging/nfpm build -o "$PWD/bin/nfpm" github.com/goreleaser/nfpm/v2/cmd/nfpm

gen=dist/gen
rm -rf "$gen"
mkdir -p "$gen/man" "$gen/completions"
bin/beamer manpages "$gen/man"
gzip -9n "$gen"/man/*.1
bin/beamer completion bash >"$gen/completions/beamer.bash"
bin/beamer completion zsh >"$gen/completions/_beamer"
bin/beamer completion fish >"$gen/completions/beamer.fish"

bin/nfpm package --config packaging/nfpm.yaml --packager deb --target dist/
ls dist/beamer_"${VERSION}"_amd64.deb
