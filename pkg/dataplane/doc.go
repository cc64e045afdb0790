// Package dataplane loads Beamer's eBPF programs (bpf/) into the kernel,
// attaches them, and gives the daemons typed access to their maps:
//
//   - Mux: the XDP mux program; instances are loaded with SetInstance (a full
//     forwarding table) and changed with ApplyDelta (one generation), both
//     atomic from the program's point of view;
//   - Agent: the tc program on each server (decapsulation, daisy chaining).
//
// Counters of every decision the programs take are readable by name.
package dataplane
