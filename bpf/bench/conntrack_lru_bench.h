/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by strategy/maglev.h in the benchmark build only (-DBEAMER_BENCH, bench/mux_bench.c). */
#ifndef BEAMER_CONNTRACK_LRU_BENCH_H
#define BEAMER_CONNTRACK_LRU_BENCH_H

#include "../include/defs.h"
#include "../include/flow.h"
#include "../include/decision.h"
#include "../include/conntrack.h"

/*
 * The reference the connection table (include/conntrack.h) is measured
 * against, in the same process (issue 27): the design it replaced, kept
 * only here. An LRU hash from the 5-tuple (16-byte key) to the server
 * (8-byte value), one LRU list per CPU (BPF_F_NO_COMMON_LRU), behind a
 * one-slot map-in-map; research/bench/dpbench creates it (bench_lru.go)
 * in the benchmark build. The programs maglev_lru_* of bench/mux_bench.c set
 * bench_ct_lru around the mux, and decide_maglev then takes this path,
 * which is the old decide_maglev line by line.
 */

struct ct_lru_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct ct_lru_value {
	__u16 server;
	__u16 pad;
	__u32 pad2;
};

struct conntrack_lru_table {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* set at load time */
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(key_size, sizeof(struct ct_lru_key));
	__uint(value_size, sizeof(struct ct_lru_value));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct conntrack_lru_table);
} conntrack_lru_bench SEC(".maps");

/* Set by the reference programs while the mux runs. */
__u32 bench_ct_lru;

INLINE int decide_maglev_lru(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	struct ct_lru_key key = {
		.saddr = f->saddr, .daddr = f->daddr, .sport = f->sport, .dport = f->dport, .proto = f->proto,
	};
	__u32 zero = 0;
	void *ct = bpf_map_lookup_elem(&conntrack_lru_bench, &zero);
	int syn = flow_is_syn(f);
	int verdict = syn ? MUX_CT_SYN : MUX_CT_MISS;

	d->with_opt = 0;
	if (ct && !syn) {
		struct ct_lru_value *e = bpf_map_lookup_elem(ct, &key);
		if (e) {
			__u64 w = server_word(servers, e->server);
			if (w && SERVER_STATE(w) != SERVER_DOWN) {
				decision_to(d, w);
				d->forward = 1;
				return MUX_CT_HIT;
			}
			verdict = MUX_CT_STALE;
		}
	}

	int why;
	__u64 entry = bucket_word(vip, f, &why);
	__u16 current = BUCKET_CURRENT(entry);
	if (!current)
		return why;
	__u64 w = server_word(servers, current);
	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	if (ct) {
		if (flood_allows_insert()) {
			struct ct_lru_value fresh = {.server = current};
			bpf_map_update_elem(ct, &key, &fresh, BPF_ANY);
		} else {
			mux_count(MUX_CT_FLOOD);
		}
	}
	decision_to(d, w);
	d->forward = 1;
	return verdict;
}

#endif
