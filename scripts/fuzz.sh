#!/bin/sh
# Runs every Go fuzz target for a bounded time (FUZZTIME, default 2s each),
# after its committed seed corpus (testdata/fuzz/FuzzX/). `make test` runs
# it; a failure leaves the failing input in testdata/fuzz/FuzzX/ to commit
# as a regression seed. Go fuzzes one target per invocation.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-2s}
run() {
	pkg=$1; shift
	for target in "$@"; do
		echo "fuzz $pkg $target ($FUZZTIME)"
		$GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$pkg" >/dev/null || {
			echo "fuzz $pkg $target failed:"; $GO test -run "^$target\$" "$pkg"; exit 1; }
	done
}
run ./pkg/ring/ringfuzz FuzzObject FuzzPointer FuzzGenName
run ./pkg/store FuzzValidKey
run ./pkg/config FuzzLoadMux FuzzLoadAgent
run ./pkg/wire FuzzParseOption FuzzDecapsulate
run ./pkg/awfd FuzzDecode
