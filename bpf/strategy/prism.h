/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy prism (Prism, Cohen et al.): ECMP bins (our buckets) plus a
 * migrated-connection table (MCT) holding only the connections whose bin
 * changed owner since their SYN. Every packet looks up the MCT first (a hit
 * sets the entry's keep-alive bit and goes to the entry's server), then the
 * bin. No option, no daisy chaining: servers of a Prism VIP only ever get
 * their own connections. Ports above 1024 are MPTCP secondary subflows
 * naming their server, as under beamer.
 *
 * Signature (64 bits, docs/strategy-prism.md, pkg/wire/signature.go):
 *   bits 48-63  VIP id: the low 16 bits of the VIP address (host order)
 *   bits 16-47  the flow hash (flow_hash.h), which also picks the bin, so a
 *               signature always falls in one bin
 *   bits  0-15  16 more bits: the lookup3 mix of the same words seeded
 *               with PRISM_SIG_SEED
 * i.e. a 16-bit VIP id and a 48-bit hash of the 5-tuple, as the paper's
 * prototype (§5.1, Fig. 8).
 *
 * The MCT of an instance is a hash map (signature -> struct mct_value) in
 * slot vip->table of mct_tables, filled by the mux daemon from the ring's
 * generations before any bucket word of the same generation
 * (pkg/dataplane/mux_prism.go).
 */
#ifndef BEAMER_STRATEGY_PRISM_H
#define BEAMER_STRATEGY_PRISM_H

#include "../include/decision.h"
#include "../include/limits.h"

#define PRISM_SIG_SEED 0x50524953 /* "PRIS" */

struct mct_value {
	__u16 server; /* server id owning the signature's connections */
	__u8 alive;   /* keep-alive bit: set by packets, cleared by the daemon */
	__u8 pad[5];
};

_Static_assert(sizeof(struct mct_value) == 8, "MCT value is 8 bytes");

struct mct_table {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* each inner map is created with its own size
				 * (a hash map's size is not part of its type) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u64); /* struct mct_value */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__array(values, struct mct_table);
} mct_tables SEC(".maps");

/*
 * SYN learning (the paper's FIB(SYN1) table, on each mux): a bin about to
 * move is published first with its owner unchanged and its bucket word's
 * upper half (Changed) non-zero — "migrating". A SYN that such a bin
 * forwards is remembered here, signature -> the owner it went to, for
 * PRISM_LEARN_SECONDS; later packets of the connection that miss the MCT
 * follow the remembered server, so a connection whose SYN came after the
 * controller's last look at the old owner survives the flip until the
 * final round puts it in the MCT (docs/strategy-prism.md, "SYNs during a
 * migration"). Shared by all CPUs (one LRU list each), sized by the daemon.
 */
#define PRISM_LEARN_SECONDS 60

struct learned_value {
	__u16 server;
	__u16 pad;
	__u32 until; /* coarse monotonic seconds */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PRISM_LEARNED_ENTRIES);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__type(key, __u64);
	__type(value, struct learned_value);
} prism_learned SEC(".maps");

/*
 * Until when this mux may hold live learned entries: the expiry of the
 * latest SYN it learned. A packet that misses the MCT looks the learned
 * table up only before then, so in steady state (no bin of this mux
 * migrating in the last PRISM_LEARN_SECONDS) a miss costs one array read
 * instead of a hash lookup. Written at most once a second (its value is
 * in seconds), so learning does not bounce its cache line either.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} prism_learning SEC(".maps");

INLINE __u32 prism_now(void) { return (__u32)(bpf_ktime_get_coarse_ns() / 1000000000ULL); }

INLINE __u64 prism_signature(__u32 hash, __be32 saddr, __be32 daddr, __be16 sport, __be16 dport)
{
	__u32 ports = ((__u32)bpf_ntohs(sport) << 16) | bpf_ntohs(dport);
	__u32 extra = jhash_3words(bpf_ntohl(saddr), bpf_ntohl(daddr), ports, PRISM_SIG_SEED);
	__u64 vip_id = bpf_ntohl(daddr) & 0xffff;

	return vip_id << 48 | (__u64)hash << 16 | (extra & 0xffff);
}

INLINE int decide_prism(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	/* MPTCP secondary subflows never get here: mux.c sends the
	 * instance's server-id range by id for every strategy (a subflow
	 * hashed into a bin would reach a server that refuses the join). */
	__u32 table = vip->table;
	__u32 hash = flow_hash_of(f);
	void *mct = bpf_map_lookup_elem(&mct_tables, &table);

	/* mct is NULL while the instance's MCT is empty (the daemon puts the
	 * map in its slot only while it holds entries): then no signature and
	 * no MCT lookup. */
	d->with_opt = 0;
	if (mct) {
		__u64 sig = prism_signature(hash, f->saddr, f->daddr, f->sport, f->dport);
		struct mct_value *v = bpf_map_lookup_elem(mct, &sig);
		if (v) {
			__u64 w = server_word(servers, v->server);
			if (w) {
				/* Written only when clear: no cache-line bouncing
				 * between CPUs on every packet. */
				if (!*(volatile __u8 *)&v->alive)
					v->alive = 1;
				decision_to(d, w);
				d->forward = 1;
				return MUX_PRISM_MCT_HIT;
			}
			/* Names a server no longer in the table (cannot happen in
			 * a valid table, forwarding.Table.Validate): the bin. */
		}
	}

	int syn = flow_is_syn(f);
	__u32 zero = 0;
	__u32 *learning = bpf_map_lookup_elem(&prism_learning, &zero);
	__u32 now = prism_now();
	if (!syn && learning && *(volatile __u32 *)learning >= now) {
		__u64 sig = prism_signature(hash, f->saddr, f->daddr, f->sport, f->dport);
		struct learned_value *l = bpf_map_lookup_elem(&prism_learned, &sig);
		if (l && l->until >= now) {
			__u64 w = server_word(servers, l->server);
			if (w) {
				decision_to(d, w);
				d->forward = 1;
				return MUX_PRISM_LEARNED_HIT;
			}
		}
	}

	void *buckets = bpf_map_lookup_elem(&bucket_tables, &table);
	if (!buckets)
		return MUX_DROP_NO_TABLE;
	__u32 b = vip->buckets;
	__u64 word = bucket_at(buckets, b, bucket_of(hash, b));
	__u16 current = BUCKET_CURRENT(word);
	if (!current)
		return MUX_DROP_NO_OWNER;
	__u64 w = server_word(servers, current);
	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	if (syn && BUCKET_CHANGED(word)) {
		__u64 sig = prism_signature(hash, f->saddr, f->daddr, f->sport, f->dport);
		struct learned_value l = {.server = current, .until = now + PRISM_LEARN_SECONDS};
		/* The gate first: a later packet of this flow must see it open. */
		if (learning && *(volatile __u32 *)learning < l.until)
			*learning = l.until;
		bpf_map_update_elem(&prism_learned, &sig, &l, BPF_ANY);
		d->also = MUX_PRISM_LEARNED;
	}
	decision_to(d, w);
	d->forward = 1;
	return MUX_PRISM_MCT_MISS;
}

#endif
