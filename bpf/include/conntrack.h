/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The connection table of the Maglev and AWFD strategies (the papers'
 * "Stateful" mux, as Katran and Cilium run it): which server each known
 * connection (5-tuple) was sent to.
 *
 * Layout (issue 27): a set-associative cache in plain arrays, not a hash
 * map. The table is B buckets (B set at load time: as many as the
 * connections it is meant for, so four slots a connection), each bucket
 * one 64-byte cache line of CT_WAYS = 4 slots of 16 bytes:
 *
 *   bytes 0-7   source and destination address (the packet's byte order)
 *   bytes 8-12  source port, destination port, protocol
 *   byte  13    flags (CT_TOUCHED)
 *   bytes 14-15 server id (0: a free slot)
 *
 * The exact 13-byte key is stored, so a slot never answers for another
 * connection. A connection lives only in the bucket its hash picks; the
 * hash is lookup3 over the tuple seeded with a random secret chosen
 * when the table is made (ct_seed, kept with the table across daemon
 * restarts), so that nobody can aim packets at one bucket to evict a known
 * connection, as the kernel's hash maps seed theirs. A lookup is two array
 * lookups the verifier inlines (no helper call) and one cache line read.
 *
 * Replacement: an approximation of LRU inside the bucket. An entry is
 * inserted untouched; the first packet that finds it sets CT_TOUCHED (a
 * write only then, so hits do not dirty the line). A new connection takes
 * the slot of its own tuple (a SYN replacing, a stale entry chosen again),
 * else a free slot, else an untouched entry (the first from a place the new
 * flow's hash picks, so that untouched entries go in turn), else — all four
 * touched since the bucket's last reset — every touched bit is cleared and
 * one slot (by the new flow's hash) is taken. Entries of connections that
 * keep sending are touched again at once and survive; one-packet entries
 * (a SYN flood, scans) replace each other. The table never needs the
 * daemon to expire anything.
 *
 * Under overload (more live connections than a bucket holds: with as many
 * connections as buckets, ~0.4% of them find their bucket full), an
 * evicted connection's next packet is a miss: it goes to the Maglev
 * table's entry for its hash and is remembered again — what Maglev
 * without a connection table does, right as long as that entry did not
 * change meanwhile. (The LRU hash it replaced held every connection up to
 * its size, and evicted the least recently used beyond.)
 *
 * Shared by all CPUs, not one region per CPU as Katran's table is: a
 * per-CPU table is only right when the NIC steers every packet of a flow
 * to one CPU (RSS), which veth and many virtual NICs do not; with it, a
 * flow whose packets arrive on two CPUs would be forgotten. With RSS a
 * bucket is written by one CPU only, so sharing costs nothing. Without a
 * lock, two CPUs inserting into one bucket at the same moment can both take
 * one slot (one connection is then a miss later), and a reader can see a
 * slot half rewritten (addresses of the new entry, ports of the old); such
 * a mixed key belongs to another bucket by its hash, so it is never found
 * there, and the kernel's LRU hash map has the same kind of race (an
 * element reused under a reader). Touched bits are set by a store of the
 * flags byte alone and cleared with atomic operations, so they never write
 * back a stale key.
 *
 * It sits behind a map-in-map (chunks, below) so that the daemon allocates
 * it only when the first Maglev or AWFD instance arrives; both lookups are
 * inlined (all chunks have one size: the inner array needs no
 * BPF_F_INNER_MAP). The end of chunk 0 keeps the seed and the layout
 * (pkg/dataplane conntrack.go), for a successor daemon that adopts the
 * pinned table; the program never reads them.
 *
 * A flood guard caps how many new entries each CPU inserts per second: past
 * the cap (a SYN flood), new connections are still forwarded by the
 * Maglev table but not remembered, so the flood cannot evict good
 * connections.
 */
#ifndef BEAMER_CONNTRACK_H
#define BEAMER_CONNTRACK_H

#include "defs.h"
#include "flow.h"
#include "flow_hash.h"

#define CT_WAYS 4
#define CT_KEY_MASK 0xffffffffffULL   /* bytes 8-12 of a slot: ports, protocol */
#define CT_TOUCHED (1ULL << 40)       /* byte 13, bit 0 */
#define CT_SERVER_SHIFT 48            /* bytes 14-15 */

struct ct_slot {
	__u64 addrs; /* saddr | daddr << 32, as loaded from the packet */
	__u64 rest;  /* sport | dport << 16 | proto << 32 | flags << 40 | server << 48 */
};

struct ct_bucket {
	struct ct_slot slot[CT_WAYS];
};

/*
 * The table is cut in chunks of at most CT_CHUNK_BUCKETS buckets, each
 * chunk the one element of its own small array. Why: the kernel allocates
 * an array map of up to 32 KiB with kmalloc, in its direct mapping (huge
 * pages), and a larger one with vmalloc (4 KiB pages). At a million
 * connections the table is tens of MiB read at random, and with 4 KiB
 * pages nearly every packet also missed the TLB (a two-dimensional page
 * walk under virtualisation); in huge pages it does not. The element
 * starts 312 bytes into its allocation (struct bpf_array), not on a cache
 * line: buckets start ct_pad bytes into it, so each is one line. The outer
 * map has one slot a chunk (set at load time).
 */
#define CT_CHUNK_BUCKETS 500
#define CT_CHUNK_BYTES ((CT_CHUNK_BUCKETS + 1) * 64) /* buckets, the pad, the seed at the end */

/* Sizes rather than types: BTF would carry the value struct only as a
 * forward declaration here. */
struct conntrack_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, CT_CHUNK_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set at load time: the chunks */
	__type(key, __u32);
	__array(values, struct conntrack_table);
} conntrack SEC(".maps");

/* Chunks, buckets a chunk (at most CT_CHUNK_BUCKETS), the bytes before the
 * first bucket of a chunk (0-56), and the table's hash seed. Set at load
 * time (the seed from the table a predecessor pinned, when adopted). */
volatile const __u32 ct_chunks;
volatile const __u32 ct_chunk_buckets;
volatile const __u32 ct_pad;
volatile const __u32 ct_seed;

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

/* A flow's key as the two words a slot compares. */
struct ct_key {
	__u64 addrs;
	__u64 rest; /* ports and protocol only */
	__u32 hash;
};

/* ports: the source port | the destination port << 16, each in network
 * order (as one little-endian load of the transport header's first word
 * gives them). */
INLINE void ct_key_make(__be32 saddr, __be32 daddr, __u32 ports, __u8 proto, struct ct_key *k)
{
	k->addrs = (__u64)saddr | ((__u64)daddr << 32);
	k->rest = (__u64)ports | ((__u64)proto << 32);
	k->hash = jhash_3words(saddr, daddr, ports, ct_seed ^ proto);
}

INLINE void ct_key_of(const struct flow *f, struct ct_key *k)
{
	ct_key_make(f->saddr, f->daddr, (__u32)f->sport | ((__u32)f->dport << 16), f->proto, k);
}

/* The flow's bucket, or NULL when no table is installed. The hash picks
 * the chunk by multiply-shift, and the bucket by the remainder's. */
INLINE struct ct_bucket *ct_bucket(const struct ct_key *k)
{
	__u64 p = (__u64)k->hash * ct_chunks;
	__u32 chunk = p >> 32, zero = 0;
	void *table = bpf_map_lookup_elem(&conntrack, &chunk);

	if (!table)
		return NULL;
	__u8 *v = bpf_map_lookup_elem(table, &zero);
	if (!v)
		return NULL;
	__u32 i = ((__u64)(__u32)p * ct_chunk_buckets) >> 32;
	__u32 pad = ct_pad;
	if (i >= CT_CHUNK_BUCKETS || pad > 56)
		return NULL;
	return (struct ct_bucket *)(v + pad + i * sizeof(struct ct_bucket));
}

INLINE int ct_matches(const struct ct_slot *s, const struct ct_key *k)
{
	/* A free slot is all zeros and never matches: the protocol is not 0. */
	return s->addrs == k->addrs && (s->rest & CT_KEY_MASK) == k->rest;
}

/* The server remembered for k in b (0: none), and its slot. */
INLINE __u16 ct_find(struct ct_bucket *b, const struct ct_key *k, struct ct_slot **slot)
{
#pragma unroll
	for (int i = 0; i < CT_WAYS; i++) {
		struct ct_slot *s = &b->slot[i];
		if (ct_matches(s, k)) {
			*slot = s;
			return (__u16)(s->rest >> CT_SERVER_SHIFT);
		}
	}
	return 0;
}

/* ct_find with the first slot's addresses already loaded (addrs0: the
 * straight-line path asks for the line early, bpf/strategy/maglev_fast.h). */
INLINE __u16 ct_find_first(struct ct_bucket *b, __u64 addrs0, const struct ct_key *k, struct ct_slot **slot)
{
	if (addrs0 == k->addrs && (b->slot[0].rest & CT_KEY_MASK) == k->rest) {
		*slot = &b->slot[0];
		return (__u16)(b->slot[0].rest >> CT_SERVER_SHIFT);
	}
#pragma unroll
	for (int i = 1; i < CT_WAYS; i++) {
		struct ct_slot *s = &b->slot[i];
		if (ct_matches(s, k)) {
			*slot = s;
			return (__u16)(s->rest >> CT_SERVER_SHIFT);
		}
	}
	return 0;
}

/* A packet of the slot's connection was forwarded by it. A plain store of
 * the flags byte (13), not an atomic or of the word: it never writes back
 * the key either, and x86 makes an atomic a full barrier, which held every
 * later load of the packet's path (the next hop, the counters) until the
 * line was owned. Racing with an insert into the slot it can leave the new
 * entry touched; racing with a new round's reset, the entry stays touched:
 * a replacement hint a little off, never a wrong answer. */
INLINE void ct_touch(struct ct_slot *s)
{
	volatile __u8 *flags = (volatile __u8 *)&s->rest + 5; /* CT_TOUCHED's byte (little-endian) */
	__u8 f = *flags;

	if (!(f & (CT_TOUCHED >> 40)))
		*flags = f | (CT_TOUCHED >> 40);
}

/* Remembers server for k in b (replacement above). Slots are chosen by
 * index, not pointer: the compiler would otherwise merge the tests into
 * bitwise operations on pointers, which the verifier refuses. */
INLINE void ct_insert(struct ct_bucket *b, const struct ct_key *k, __u16 server)
{
	__u32 own = CT_WAYS, free = CT_WAYS, untouched = 0;

#pragma unroll
	for (int i = CT_WAYS - 1; i >= 0; i--) { /* backwards: the first of each kind wins */
		__u64 rest = b->slot[i].rest;
		if (ct_matches(&b->slot[i], k))
			own = i;
		else if (!(rest >> CT_SERVER_SHIFT))
			free = i;
		else if (!(rest & CT_TOUCHED))
			untouched |= 1 << i;
	}
	/* Among untouched entries, the first from a place the new flow's hash
	 * chooses: each one goes in turn, none stays for ever. */
	__u32 start = k->hash & (CT_WAYS - 1), v = own < CT_WAYS ? own : free; /* bits the bucket hardly depends on */
	if (v >= CT_WAYS) {
#pragma unroll
		for (int j = CT_WAYS - 1; j >= 0; j--) {
			__u32 i = (start + j) & (CT_WAYS - 1);
			if (untouched & (1 << i))
				v = i;
		}
	}
	if (v >= CT_WAYS) {
		/* Every entry used since the last reset: start a new round. */
#pragma unroll
		for (int i = 0; i < CT_WAYS; i++)
			__sync_fetch_and_and(&b->slot[i].rest, ~CT_TOUCHED);
		v = start;
	}
	struct ct_slot *s = &b->slot[v & (CT_WAYS - 1)];
	s->addrs = k->addrs;
	s->rest = k->rest | ((__u64)server << CT_SERVER_SHIFT);
}

#endif
