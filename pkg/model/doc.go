// Package model is the Go reference model of the data path: the decisions of
// the mux (bpf/mux.c) and of the server agent (bpf/agent.c), written plainly
// from the Beamer paper so tests can check the BPF programs against it byte
// for byte (testdata/*-vectors.json) and simulations can run without a kernel.
//
// Counter names are the BPF programs' counter names, so a model run and a
// kernel run can be compared decision by decision.
package model
