#!/usr/bin/env bash
# Regenerates pkg/controlplane/mgmtapi/mgmtv1 from pkg/controlplane/mgmtapi/proto (the management
# API's schema). Needs protoc (Debian protobuf-compiler, in
# scripts/apt-packages.txt); the Go plugins are built at pinned versions
# from the module proxy into a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "$0: needs protoc (apt-get install protobuf-compiler)" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin "${GO:-go}" install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN=$bin "${GO:-go}" install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
PATH=$bin:$PATH protoc -I pkg/controlplane/mgmtapi/proto \
	--go_out=pkg/controlplane/mgmtapi/mgmtv1 --go_opt=paths=source_relative \
	--go-grpc_out=pkg/controlplane/mgmtapi/mgmtv1 --go-grpc_opt=paths=source_relative \
	beamer/mgmt/v1/mgmt.proto
mv pkg/controlplane/mgmtapi/mgmtv1/beamer/mgmt/v1/*.go pkg/controlplane/mgmtapi/mgmtv1/
rm -rf pkg/controlplane/mgmtapi/mgmtv1/beamer
