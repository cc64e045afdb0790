/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Maglev strategy's connection table (the papers' "Stateful" mux, as
 * Katran and Cilium run it): an LRU hash from a connection's 5-tuple to the
 * server chosen for it, with one LRU list per CPU (BPF_F_NO_COMMON_LRU) so
 * CPUs do not contend on eviction. The table itself is shared, not one per
 * CPU as Katran's: a per-CPU table is only right when the NIC steers every
 * packet of a flow to one CPU (RSS), which veth and many virtual NICs do
 * not; with it, a flow whose packets arrive on two CPUs would be forgotten.
 * It sits behind a one-slot map-in-map so that the daemon allocates it only
 * when the first Maglev instance arrives.
 *
 * A flood guard caps how many new entries each CPU inserts per second: past
 * the cap (a SYN flood), new connections are still forwarded by the Maglev
 * table but not remembered, so the flood cannot evict good connections.
 */
#ifndef BEAMER_CONNTRACK_H
#define BEAMER_CONNTRACK_H

#include "defs.h"

struct flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct flow_entry {
	__u16 server; /* server id chosen for the connection */
	__u16 pad;
	__u32 pad2;
};

/* Sizes rather than types: BTF would carry the key and value structs only
 * as forward declarations here. */
struct conntrack_table {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* set at load time */
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(key_size, sizeof(struct flow_key));
	__uint(value_size, sizeof(struct flow_entry));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct conntrack_table);
} conntrack SEC(".maps");

struct flood_window {
	__u64 start; /* coarse ns */
	__u64 inserts;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flood_window);
} flood_guard SEC(".maps");

/* New entries one CPU may insert per second; 0 = no cap. Set at load. */
volatile const __u64 max_inserts_per_cpu_second;

/* May this CPU insert one more connection entry now? */
INLINE int flood_allows_insert(void)
{
	__u32 zero = 0;
	struct flood_window *w = bpf_map_lookup_elem(&flood_guard, &zero);

	if (!w || !max_inserts_per_cpu_second)
		return 1;
	__u64 now = bpf_ktime_get_coarse_ns();
	if (now - w->start >= 1000000000ULL) {
		w->start = now;
		w->inserts = 0;
	}
	if (w->inserts >= max_inserts_per_cpu_second)
		return 0;
	w->inserts++;
	return 1;
}

INLINE void *conntrack_table(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&conntrack, &zero);
}

#endif
