package dpbench

// The benchmark builds of the mux and the agent (bpf/bench: the production
// programs compiled with -DBEAMER_BENCH plus wrappers that undo what each
// run did, floors and probes) are compiled from bpf/ by `make generate`
// (clang) and embedded by the bpf2go bindings it writes next to this
// file. They live here, not in pkg/dataplane, so that the product binary
// carries none of them; they are loaded through dataplane.MuxOptions.Spec
// and AgentOptions.Spec, on the production loader (bench_mux.go,
// bench_agent.go).

//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -DBEAMER_BENCH -I/usr/include/x86_64-linux-gnu" -target bpfel muxBench ../../../bpf/bench/mux_bench.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -DBEAMER_BENCH -I/usr/include/x86_64-linux-gnu" -target bpfel agentBench ../../../bpf/bench/agent_bench.c
