#!/usr/bin/env bash
# Builds dist/beamer_VERSION_amd64.deb with nfpm, a Go module pinned here
# (no download of a prebuilt binary): the binary, the systemd units, the
# example configurations (as conffiles) and the dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.41.3
# Debian versions must start with a digit: 0.0.0~gitREV for builds from git.
rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
export VERSION=${VERSION:-0.0.0~git${rev}}
mkdir -p bin dist
"$GO" build -o bin/beamer ./cmd/beamer
"$GO" run "$NFPM" package --config packaging/nfpm.yaml --packager deb --target dist/
ls dist/*.deb
