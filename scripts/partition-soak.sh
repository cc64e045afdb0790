#!/bin/sh
# A longer run of the partition rig (research/faults/partition): FAULTS
# faults (default 20) on each store (default both: embedded etcd and
# ZooKeeper), each followed by 10–20 s of settling, one seed per store
# (SEED, default drawn and printed), the history checker as the verdict.
# Prints, per fault kind, the failover time (fault → the next publication a
# mux applied) and the mux lag (first mux → last mux applying a pair),
# median and worst. Bounded: each store's run gives up after BUDGET
# (default 30m; the rig stops injecting in time to heal and check).
# Every fault kind of the rig, disk-failed included (each member's data on
# an ext4 filesystem of its own on a loop device, failed with ext4's
# shutdown ioctl). KINDS=member-cut,disk-failed limits the run to those.
# Needs root (namespaces, BPF, loop devices) and FRR, ZooKeeper (make setup).
# DOC=1 also writes the run's summary and figures into docs/control-plane.md
# between its partition-soak markers (so the figures there are this script's,
# never typed by hand).
#
#   scripts/partition-soak.sh [FAULTS] [embedded|zookeeper]
set -eu
cd "$(dirname "$0")/.."
faults=${1:-20}
store_arg=${2:-}
stores=${2:-"embedded zookeeper"}
budget=${BUDGET:-30m}
seed=${SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}

# doc_section STORE VERDICT LOG: one store's part of the docs block: the
# checker's verdict and summary, the faults injected, and the figures
# table (Summarize's columns) as Markdown.
doc_section() {
	echo "**$1**: checker $2, seed $seed. $(sed -n 's/^ *partition_test.go:[0-9]*: \([0-9]* requests (.*\)/\1/p' "$3" | head -1)"
	echo
	sed -n 's/^ *rig.go:[0-9]*: \(fault [0-9]*: .*\)/- \1/p; s/^ *rig.go:[0-9]*: \(broken: .*\)/- \1/p' "$3"
	echo
	awk '/fault +count +failover/ { on = 1; print "| fault | count | failover p50 | failover max | ack p50 | ack max | mux lag p50 | mux lag max | |"; print "|---|---|---|---|---|---|---|---|---|"; next }
		on && /^ *$/ { exit }
		on { note = ""; for (i = 9; i <= NF; i++) note = note " " $i; printf "| %s | %s | %s | %s | %s | %s | %s | %s |%s |\n", $1, $2, $3, $4, $5, $6, $7, $8, note }' "$3"
	echo
}

# write_doc BLOCK: replaces what docs/control-plane.md holds between its
# partition-soak markers with the run's header and BLOCK.
write_doc() {
	doc=docs/control-plane.md
	grep -q '^<!-- partition-soak:begin -->$' "$doc" && grep -q '^<!-- partition-soak:end -->$' "$doc" ||
		{ echo "partition-soak: $doc lacks the partition-soak markers" >&2; exit 2; }
	head=$(mktemp)
	{
		echo "Written by \`DOC=1 SEED=$seed scripts/partition-soak.sh $faults${store_arg:+ $store_arg}\` on $(date -u +%Y-%m-%d)," \
			"$(nproc) cores$( [ -n "${KINDS:-}" ] && echo ", kinds $KINDS"); do not edit by hand. Failover is fault → the" \
			"next publication a mux applied (it includes the wait for the workload's next request), ack is fault →" \
			"the first acknowledged request sent after it, mux lag is first → last mux applying a publication."
		echo
		cat "$1"
	} >"$head"
	awk -v block="$head" '
		/^<!-- partition-soak:begin -->$/ { print; while ((getline line < block) > 0) print line; skip = 1; next }
		/^<!-- partition-soak:end -->$/ { skip = 0 }
		!skip { print }' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
	rm -f "$head"
	echo "partition-soak: wrote the figures into $doc"
}
status=0
doc_block=$(mktemp)
trap 'rm -f "$doc_block"' EXIT
for store in $stores; do
	case $store in
	embedded) test=TestPartitionEtcd ;;
	zookeeper) test=TestPartitionZooKeeper ;;
	*) echo "partition-soak: store $store: want embedded or zookeeper" >&2; exit 2 ;;
	esac
	echo "== $store: $faults faults, seed $seed (replay: SEED=$seed $0 $faults $store)"
	log=$(mktemp)
	if BEAMER_PARTITION_KINDS=${KINDS:-} BEAMER_PARTITION_SEED=$seed BEAMER_PARTITION_SOAK=$faults BEAMER_PARTITION_SOAK_BUDGET=$budget \
		go test -count=1 -timeout 45m -v -run "^$test\$" ./research/faults/partition/ >"$log" 2>&1; then
		verdict=clean
	else
		verdict=FAILED
		status=1
	fi
	# The run's summary, the figures table, any violation.
	sed -n -e 's/^ *rig.go:[0-9]*: //p' -e 's/^ *partition_test.go:[0-9]*: //p' "$log" | grep -v '^request ' || true
	awk '/fault +count +failover/,/^ *$/' "$log"
	grep -A40 'the checker found violations' "$log" || true
	echo "== $store: $verdict (log: $log)"
	doc_section "$store" "$verdict" "$log" >>"$doc_block"
done
if [ "${DOC:-}" = 1 ]; then
	write_doc "$doc_block"
fi
exit $status
