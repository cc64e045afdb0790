package dataplane

// The BPF objects are compiled from bpf/ by `make generate` (clang) and
// embedded by the bpf2go bindings it writes next to this file.

//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type vip_info -type mux_counter -type cheetah_mux_inst mux ../../bpf/mux.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel hashProbe ../../bpf/probe/flow_hash_probe.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel awfdProbe ../../bpf/probe/awfd_probe.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel gue6Probe ../../bpf/probe/gue6_probe.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type agent_vip -type agent_counter -type lpm_v4_key -type lpm_v6_key -type cheetah_vip agent ../../bpf/agent.c
//go:generate go tool bpf2go -cc clang -cflags "-mcpu=v3 -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type vip_stats_key -type vip_stats6_key -type vip_stats_val vipStats ../../bpf/vipstats.c
