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
#
#   scripts/partition-soak.sh [FAULTS] [embedded|zookeeper]
set -eu
cd "$(dirname "$0")/.."
faults=${1:-20}
stores=${2:-"embedded zookeeper"}
budget=${BUDGET:-30m}
seed=${SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}
status=0
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
done
exit $status
