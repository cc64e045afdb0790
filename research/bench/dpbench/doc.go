// Package dpbench measures the per-packet cost of the data-plane programs
// inside the kernel with BPF_PROG_TEST_RUN, so that every figure is a real
// run of the real program: `beamer-lab bench dataplane`.
//
// Method. A test run with repeat N runs the program N times in one system
// call, but each time on the packet as the previous run left it; the
// benchmark build of each program therefore undoes what it did (the mux
// strips its encapsulation again, the agent restores the outer header) and
// rotates the packet over a set of flows, so every repetition takes the full
// path on a fresh connection. Each figure is the median of several trials of
// wall time / N, N large enough that the one system call is noise, and each
// trial checks the program's decision counter moved by exactly N (the path
// was really taken). The floor (swap MACs, XDP_TX) and an empty program are
// measured in the same run; ratios are between figures of the same run.
package dpbench
