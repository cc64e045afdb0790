#!/bin/sh
# Regenerates the measured figures of docs/operations.md from one run of the
# tests that measure them, so the document cannot drift from the code:
#   - "Restarting the daemons": TestAgentRestartHitless and
#     TestMuxRestartUnderTraffic (./cmd/beamer), the longest pause of a live
#     connection per strategy and restart, and the connections broken;
#   - "Trust boundaries": TestAPIAndMetricsUnderFlood (./pkg/node/agentd), the
#     node's descriptors, memory, log and /healthz under floods of its API.
# Each block stands between <!-- NAME:begin --> and <!-- NAME:end --> lines.
# Needs root (namespaces, BPF); takes about a minute.
set -eu
cd "$(dirname "$0")/.."
doc=docs/operations.md
log=$(mktemp)
block=$(mktemp)
trap 'rm -f "$log" "$block" "$doc.new"' EXIT

# replace NAME: puts $block between NAME's markers in $doc.
replace() {
	grep -q "^<!-- $1:begin -->\$" "$doc" || { echo "ops-figures: $doc has no <!-- $1:begin --> marker" >&2; exit 1; }
	awk -v name="$1" -v file="$block" '
		$0 == "<!-- " name ":begin -->" { print; while ((getline l < file) > 0) print l; skip = 1; next }
		$0 == "<!-- " name ":end -->" { skip = 0 }
		!skip { print }' "$doc" >"$doc.new"
	mv "$doc.new" "$doc"
}

run() {
	if ! go test -count=1 -timeout 600s -v "$@" >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		echo "ops-figures: go test $* failed" >&2
		exit 1
	fi
}

run -run 'TestAgentRestartHitless|TestMuxRestartUnderTraffic' ./cmd/beamer/
# "    agent_restart_test.go:535: beamer, agent SIGTERM and start: longest pause
#  of a connection 8ms (echo, a line every 2 ms), 12ms (download)"
awk -v when="$(date -u '+%Y-%m-%d %H:%M') UTC" -v rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" '
	/longest pause of a connection/ {
		rig = ($1 ~ /^mux_restart/) ? "mux rig" : "agent rig"
		line = $0; sub(/^[^:]*:[0-9]+: /, "", line)
		strat = line; sub(/,.*/, "", strat)
		what = line; sub(/^[^,]*, /, "", what); sub(/: longest pause.*/, "", what)
		sub(/ \([0-9.]+m?s to forward\)/, "", what)
		if (what == "no restart") what = "no restart (" rig ")"
		n = split(line, w, " ")
		echo = ""; dl = ""
		for (i = 1; i <= n; i++) {
			if (w[i] == "(echo,") echo = w[i-1]
			if (w[i] == "(download)") dl = w[i-1]
		}
		sub(/,$/, "", echo)
		if (!(what in seenw)) { seenw[what] = 1; rows[++nr] = what }
		if (!(strat in seens)) { seens[strat] = 1; cols[++nc] = strat }
		cell[what, strat] = echo " / " dl
	}
	/ connections broken$/ {
		line = $0; sub(/^[^:]*:[0-9]+: /, "", line)
		strat = line; sub(/:.*/, "", strat)
		split(line, w, " "); broken[strat] += w[2]; total[strat] += w[4]
	}
	END {
		printf "Measured by `scripts/ops-figures.sh` (commit %s, %s): the longest pause of\n", rev, when
		print "a live connection, exchanges (a line every 2 ms) / downloads."
		print ""
		hdr = "| restart |"; sep = "|---|"
		for (j = 1; j <= nc; j++) { hdr = hdr " " cols[j] " |"; sep = sep "---|" }
		print hdr; print sep
		for (i = 1; i <= nr; i++) {
			row = "| " rows[i] " |"
			for (j = 1; j <= nc; j++) row = row " " cell[rows[i], cols[j]] " |"
			print row
		}
		row = "| connections broken, all restarts |"
		for (j = 1; j <= nc; j++) row = row " " broken[cols[j]] " of " total[cols[j]] " |"
		print row
	}' "$log" >"$block"
replace restart-figures

run -run 'TestAPIAndMetricsUnderFlood' ./pkg/node/agentd/
# "    flood_test.go:126: idle flood, connections held: node fds 60, RSS 22.7 MB, log 238 bytes"
awk -v when="$(date -u '+%Y-%m-%d %H:%M') UTC" -v rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" '
	/flood_test.go:[0-9]+: / {
		line = $0; sub(/^[^:]*:[0-9]+: /, "", line)
		lines[++n] = line
	}
	END {
		printf "Measured by `scripts/ops-figures.sh` (commit %s, %s), TestAPIAndMetricsUnderFlood:\n\n", rev, when
		for (i = 1; i <= n; i++) print "- " lines[i]
	}' "$log" >"$block"
replace flood-figures
echo "ops-figures: wrote $doc" >&2
