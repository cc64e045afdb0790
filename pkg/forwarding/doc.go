// Package forwarding defines the state a mux forwards packets by, independent
// of where it is stored or how it is loaded into the kernel.
//
// For each load-balancer instance a mux holds two tables:
//
//   - the bucket table: a fixed number B of buckets; a connection hashes to one
//     bucket for the whole life of the instance, and each bucket names the
//     server that currently owns it, up to K servers that owned it before
//     (its history, most recent first), and when the ownership last changed
//     (Beamer §4.1–4.2, extended from one previous owner to K);
//   - the server-id table: server id (1025–65535) → server address. Buckets
//     name servers by id, and MPTCP secondary subflows are addressed to
//     VIP:id (Beamer §4.4), so one table serves both.
//
// A Table is changed only by applying a Delta of the next generation, which
// is how the controller publishes changes and how a mux replays them. The same
// types are used by the controller, the control store encoding, the mux
// daemon that programs BPF maps, and the Go reference model of the data path.
package forwarding
