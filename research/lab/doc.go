// Package lab builds a small datacenter in network namespaces on one machine
// and runs load-balancing scenarios through it with real kernels, real TCP,
// HTTP and MPTCP: clients with two paths each, a border router (FRR zebra
// and bgpd, ECMP with a 5-tuple hash over the muxes), muxes running
// `beamer mux` that announce the VIP over BGP, servers running
// `beamer agent` and an HTTP file server, and `beamer controller` with its
// store. A scenario is a schedule of events (servers and muxes added,
// removed, failed; weights; a SYN flood); the paper's §6 experiments are
// built-in scenarios. It counts what clients see — connections that broke,
// MPTCP subflows that came up, flow completion times — and what servers
// daisy-chained, and reports it beside the paper's numbers (tables, JSON,
// PNG plots).
//
// Every namespace, process and BPF program the lab makes is removed when it
// closes, also after a failure or an interrupt; Inventory lets a test prove it.
package lab
