// Package partition is a fault-injection rig for the replicated control
// plane (issue 26, item 3): it runs the lab (research/lab) with three
// controller hosts, each a store member and a controller, strikes them
// with faults at seeded random times while an operator's workload of
// `beamer ctl` requests runs, heals, and hands what it recorded to the
// history checker (research/faults/history) as its assertion.
//
// # The rig
//
// lab.Options.ControlHosts 3 (research/lab/controlhosts.go) adds hosts
// ctl, ctl1, ctl2 (198.18.0.250–.252) to the lab's fabric. With the
// embedded store each controller runs an embedded etcd member of one
// cluster (embed://…&initial-cluster=h0=…,h1=…,h2=…, the setup of
// docs/control-plane.md "Three controller hosts on the embedded store",
// plaintext with --insecure on the lab's closed fabric instead of mutual
// TLS); with ZooKeeper each host runs one server of a 3-server ensemble
// (a zoo.cfg with server.1–3 lines) and a controller on zk://all three.
// Two muxes list every member (etcd://a,b,c or zk://a,b,c) and run
// with --log-level debug --log-format json; three servers run agents and
// the lab's HTTP server; two clients hold long-lived connections through
// the VIP (2 downloading in a loop and 6 mostly idle, each), counted
// broken by the lab's load generator when reset or stalled for 15 s.
// `beamer ctl` runs on the router's namespace (an operator's machine)
// with --api listing the three controllers' APIs (a standby forwards to
// the elected one).
//
// # Faults (faults.go)
//
//   - member-cut: a controller host's only link down (ip link), the
//     elected one's or, half the time, a follower's;
//   - leader-isolated: the elected controller's host cut from the other
//     controller hosts by blackhole routes on both sides, still reaching
//     the muxes, servers and the operator (nftables is not installed on
//     every lab machine; a /32 blackhole route drops as surely);
//   - leader-killed: SIGKILL of the elected controller (its embedded
//     member dies with it; the ZooKeeper server on its host does not),
//     started again, on its kept data directory, at heal;
//   - leader-paused: SIGSTOP of the elected controller, SIGCONT at heal;
//   - quorum-lost: two of the three hosts' links down at once;
//   - disk-failed: a member's disk fails (the elected controller's host
//     or, half the time, another): lab.Options.ControlHostDisks puts each
//     member's data (the embedded member's directory, the ZooKeeper
//     server's snapshots and transaction log) on an ext4 filesystem of its
//     own, a sparse image on a loop device under a shared bind mount of
//     the store directory, and the fault is ext4's shutdown ioctl
//     (FS_IOC_SHUTDOWN, journal flushed first): every later write and
//     fsync fails with EIO. etcd ends the process at the first WAL write
//     that fails ("failed to save Raft hard state and entries"), and with
//     it the controller that embeds it; a ZooKeeper server exits. Healing
//     stops the member if it still runs, unmounts and mounts the
//     filesystem again (the journal replayed) and starts the member again
//     on its data. Without loop devices the tests skip (fail in CI).
//
// A paused or isolated leader stays so for 12–14 s in CI runs, longer
// than the store's lease (etcd's 10 s; ZooKeeper's session timeout), so
// that another controller is elected while the old one still believes it
// leads and then comes back; the soak draws 3–20 s, both sides of it.
// Each is injected after a random gap, lasts a random hold and is followed
// by a random settle time, all within Config's bounds, in a seeded order;
// the seed is printed. A read-only remount of a member's directory is not
// how the disk fails here: it fails with EBUSY ("mount point is busy",
// checked) while the member holds its WAL open for writing, and a loop
// device set read-only (blockdev --setro) still takes writes. Not
// injected: a clock step of one member (Linux time namespaces offset only
// CLOCK_MONOTONIC and CLOCK_BOOTTIME, not CLOCK_REALTIME, and stepping
// the machine's clock steps every member and the test runner at once);
// TestClockStepLeader in pkg/controlplane/controller covers it in
// process (docs/control-plane.md, "Clock steps").
//
// BEAMER_PARTITION_KINDS=member-cut,disk-failed limits a run to those
// kinds (a replay, a measurement); BEAMER_PARTITION_KEEP=1 keeps the run
// directory (logs) and prints every request's and fault's times.
//
// # History (workload.go, muxlog.go)
//
// The workload sends one request at a time (add a removed server, remove
// one while two others stay, or set a new weight; 200–700 ms apart,
// at most 2000), each with --timeout 5s, and records its outcome: ok;
// failed (a refusal, or "no controller answered": the request was
// withdrawn from the store and must never take effect); unknown (a
// timeout, a lost call, or "request not finished": a controller took it
// and the next elected one runs it again). ctl does not print the
// generation a change was published at: the rig records the store's
// latest generation read (ctl list -o json) right after the
// acknowledgement, which is at or after it. The muxes' side is what
// the product logs: "table installed" (a whole table) and "generation
// applied" (a delta), each with instance, incarnation, generation and,
// at debug level, the table's digest (forwarding.Table.Digest). After
// the last heal the rig waits for every mux to log the store's latest
// pair (within Config.Bound), reads the final state with ctl list, and
// stops the load. The store's digest for the final pair is taken from
// the muxes that applied it (the rig does not decode the ring itself);
// the unique-table property then holds every mux to that one table.
//
// # Running
//
//	go test -count=1 -timeout 15m -run 'TestPartition' ./research/faults/partition/
//
// runs each store with the fixed seed 1 and one random seed (printed;
// BEAMER_PARTITION_SEED=N replays one), each fault kind once, about
// 1.5 minutes per seed. scripts/partition-soak.sh runs more faults with
// longer settle times (BEAMER_PARTITION_SOAK=N faults) and prints, per
// fault kind, the failover time (fault → the next publication any mux
// applied, a pair newer than every one before the fault; it includes the
// wait for the workload's next request), the operator's outage (fault →
// the first acknowledgement of a request sent after it) and the mux lag
// (first mux → last mux applying a pair), median and worst.
package partition
