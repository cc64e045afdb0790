// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The mux's benchmark build (research/bench/dpbench, loaded by its Go code
 * as a dataplane.MuxOptions.Spec; bench dataplane --compare): the
 * production program, the same source (mux.c, compiled with BEAMER_BENCH),
 * plus the wrappers below that let BPF_PROG_TEST_RUN repeat its whole path.
 */
#ifndef BEAMER_BENCH
#define BEAMER_BENCH
#endif
#include "../mux.c"


/*
 * Benchmark build only (research/bench/dpbench and its tests).
 * BPF_PROG_TEST_RUN with repeat runs a program again on the packet as the
 * previous run left it, so the wrapper undoes the encapsulation after each
 * forwarded packet — shrinking the head back and restoring the Ethernet
 * header — and every repetition takes the full path on the original packet.
 * When bench_flows is set, it also gives each repetition another connection
 * (source address and port of flow number bench_order(seq) over bench_flows
 * flows), so that tables are looked up all over, as under real traffic. The
 * undo and the rotation are part of what is measured.
 *
 * Random order: the flows are visited in a fixed pseudo-random permutation,
 * not 0, 1, 2, ...: a stateful table filled in insertion order and read back
 * in that order would read its entries nearly sequentially (the prefetcher's
 * best case), which real traffic never does. research/bench/dpbench mirrors
 * bench_order in Go (order.go) and checks it is a permutation of every flow
 * count it uses.
 */
__u32 bench_flows;
__u32 bench_seq;
/* Which visiting order this build uses (1: bench_order below). The compare
 * mode refuses a baseline that visits flows in another order. */
volatile const __u32 bench_order_version = 2;
/* Selects one of several visiting orders: research/bench/dpbench fills a connection
 * table in one order (key 1) and measures in another (key 0), so the
 * measured reads do not follow the table's allocation order either. */
__u32 bench_key;

/* A bijection of [0, 2^k) for the k whose mask is given: adding the key
 * and odd multipliers are invertible modulo 2^k, and x ^= x >> s is
 * invertible for s >= 1. */
INLINE __u32 bench_mix(__u32 x, __u32 mask, __u32 key)
{
	x = (x * 0x9e3779b1u) & mask;
	x ^= x >> 5;
	x = (x + key * 0x7feb352du) & mask; /* between rounds: orders unrelated */
	x = (x * 0x85ebca77u) & mask;
	x ^= x >> 11;
	x = (x * 0xc2b2ae3du) & mask;
	x ^= x >> 7;
	return x;
}

#define BENCH_ORDER_WALKS 64

/* The seq-th flow of the visiting order: the bijection restricted to
 * [0, n) by walking its cycle until it lands there (n is more than half of
 * 2^k, so a walk is short; research/bench/dpbench checks none is longer than
 * BENCH_ORDER_WALKS for the counts it uses). */
INLINE __u32 bench_order(__u32 seq, __u32 n)
{
	__u32 mask = n - 1;

	mask |= mask >> 1;
	mask |= mask >> 2;
	mask |= mask >> 4;
	mask |= mask >> 8;
	mask |= mask >> 16;
	__u32 x = seq;
	for (int i = 0; i < BENCH_ORDER_WALKS; i++) {
		x = bench_mix(x, mask, bench_key);
		if (x < n)
			return x;
	}
	return seq; /* never for the counts research/bench/dpbench uses (checked there) */
}

INLINE void rotate_flow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct tcphdr *tcp = (void *)(ip + 1);

	if (!bench_flows || (void *)(tcp + 1) > data_end)
		return;
	__u32 seq = bench_seq++;
	if (seq >= bench_flows)
		seq = bench_seq = 0, bench_seq++;
	__u32 i = bench_order(seq, bench_flows);
	ip->saddr = bpf_htonl(0xc6130000 | (i >> 14));		/* 198.19.x.y */
	tcp->source = bpf_htons(1024 + (i & 0x3fff));
}

/* Copies the Ethernet header before the program under test runs. */
INLINE int save_eth(struct xdp_md *ctx, struct ethhdr *saved)
{
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(*saved) > (void *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(saved, data, sizeof(*saved));
	return 0;
}

/* Drops the outer_len bytes after the Ethernet header and puts the saved
 * Ethernet header back in front: the packet is as it came in. Returns
 * action. undo_encap (IPv4 outer) and undo_gue6 (IPv6 outer) find the
 * length. */
INLINE int strip_outer(struct xdp_md *ctx, const struct ethhdr *saved, int outer_len, int action)
{
	if (bpf_xdp_adjust_head(ctx, outer_len))
		return XDP_ABORTED;
	void *data = (void *)(long)ctx->data;
	if (data + sizeof(*saved) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, saved, sizeof(*saved));
	return action;
}

/* Strips the outer IPv4 header the packet now carries (IP-in-IP or GUE). */
INLINE int undo_encap(struct xdp_md *ctx, const struct ethhdr *saved, int action)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *outer = data + sizeof(struct ethhdr);

	if ((void *)(outer + 1) > data_end)
		return XDP_ABORTED;
	int outer_len = outer->ihl * 4; /* 20, or 36-60 with the option */
	if (outer->protocol == IPPROTO_UDP) { /* GUE (gue.h): 32 + private data */
		struct guehdr *g = (void *)outer + sizeof(struct iphdr) + sizeof(struct udphdr);
		if ((void *)(g + 1) > data_end)
			return XDP_ABORTED;
		outer_len = GUE4_LEN_PLAIN + (g->hlen & GUE_HLEN_MASK) * 4;
	}
	return strip_outer(ctx, saved, outer_len, action);
}

SEC("xdp")
int beamer_mux_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	rotate_flow(ctx);
	int action = beamer_mux(ctx);
	if (action != XDP_TX && action != XDP_REDIRECT)
		return action;
	return undo_encap(ctx, &saved, action);
}

/* The floor of XDP forwarding: swap the MACs and send the frame back. */
SEC("xdp")
int floor_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
	return XDP_TX;
}

/* The floors' encapsulation: a fixed outer header to daddr with the
 * 16-byte option (no previous owner), as the mux writes for a bucket that
 * never moved. Returns the new Ethernet header, NULL when it did not fit. */
INLINE struct ethhdr *encap_fixed(struct xdp_md *ctx, __be32 daddr)
{
	struct encap_params p = {.saddr = mux_addr, .daddr = daddr};

	p.opt.type = BEAMER_OPT_TYPE;
	p.opt.len = BEAMER_OPT_FIXED;
	return xdp_encap_ipv4(ctx, &p, OUTER_LEN_OPT);
}

/* The plain floor's work: the fixed outer header and option, fixed MACs,
 * XDP_TX (encap_floor_plain_bench, and after its read
 * encap_floor_random_bench). */
INLINE int encap_plain(struct xdp_md *ctx)
{
	struct ethhdr *eth = encap_fixed(ctx, bpf_htonl(0xc612000a));
	if (!eth)
		return XDP_ABORTED;
	__builtin_memset(eth->h_dest, 0x02, ETH_ALEN);
	__builtin_memset(eth->h_source, 0x04, ETH_ALEN);
	return XDP_TX;
}

/*
 * The floor of encapsulation: grow the head by the outer header with the
 * option, write fixed Ethernet and outer headers, send, and undo as
 * beamer_mux_bench does. What any IP-in-IP mux pays before deciding anything.
 */
SEC("xdp")
int encap_floor_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	struct ethhdr *eth = encap_fixed(ctx, bpf_htonl(0xc612000a));
	if (!eth)
		return XDP_ABORTED;
	__builtin_memcpy(eth->h_dest, saved.h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, saved.h_dest, ETH_ALEN);
	return undo_encap(ctx, &saved, XDP_TX);
}

/*
 * The honest floor of an IP-in-IP mux (issue 27): grow the head, write a
 * fixed outer header with a 16-byte option and fixed MACs, send — and
 * nothing else: no saved header, no undo. Without the undo a repeated run
 * would grow the packet again and again, so it is measured by the
 * per-packet method only (a fresh packet each run), like the production
 * programs it is the floor of.
 */
SEC("xdp")
int encap_floor_plain_bench(struct xdp_md *ctx)
{
	return encap_plain(ctx);
}

/*
 * The same floor on live traffic (research/bench/dpbench live.go): the fixed outer
 * header and option, the MACs and egress device the bench sets, and a
 * redirect there — what the mux program does around its decision, so
 * that its live rate has a floor of the same path beside it.
 */
__u32 live_ifindex;
__u8 live_dmac[ETH_ALEN];
__u8 live_smac[ETH_ALEN];

SEC("xdp")
int encap_floor_live_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	struct iphdr *ip = data + sizeof(struct ethhdr);

	/* The generator's TCP frames only: the odd frame of the generator
	 * namespace's own stack (neighbour discovery) goes to the stack. */
	if ((void *)(ip + 1) > (void *)(long)ctx->data_end || ((struct ethhdr *)data)->h_proto != bpf_htons(ETH_P_IP) ||
	    ip->protocol != IPPROTO_TCP)
		return XDP_PASS;
	struct ethhdr *eth = encap_fixed(ctx, bpf_htonl(0xc612020a));
	if (!eth)
		return XDP_ABORTED;
	__builtin_memcpy(eth->h_dest, live_dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, live_smac, ETH_ALEN);
	return bpf_redirect(live_ifindex, 0);
}

/*
 * What moving to the next flow costs a batched mux row: beamer_mux_bench
 * does it before the mux runs; encap_floor_bench does not, and the
 * per-packet method (the production program, a fresh packet each run)
 * has no such step. Everything else beamer_mux_bench adds (saving the
 * Ethernet header, the undo) encap_floor_bench pays too.
 */
SEC("xdp")
int rotation_bench(struct xdp_md *ctx)
{
	rotate_flow(ctx);
	return XDP_TX;
}

/*
 * Traffic generator for the live benchmark: run in live-frames test mode on
 * the generator's interface, it sends a minimum-size frame out again and
 * again, each time as another of bench_flows connections. It writes the
 * whole frame from gen_frame every time: live-frames mode recycles pages
 * without restoring them, and the mux downstream rewrote them.
 */
#define GEN_FRAME_LEN 60
__u8 gen_frame[GEN_FRAME_LEN];

SEC("xdp")
int traffic_gen_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + GEN_FRAME_LEN > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, gen_frame, GEN_FRAME_LEN);
	rotate_flow(ctx);
	return XDP_TX;
}

/*
 * What a touched cache line costs: reads bench_lines (at most
 * BENCH_MAX_LINES) distinct lines of bench_scratch, bench_line_stride lines
 * apart, always the same lines, as a program reads its tables' hot lines on
 * every packet; changes nothing. lines-0 is the program with its loop and
 * nothing read.
 */
#define BENCH_MAX_LINES 16
__u32 bench_lines;
/* Lines from one read to the next: 131 puts each line in a page of its
 * own, 2 all sixteen in one page (every other line: none in a pair the
 * adjacent-line prefetcher fetches together). Set by research/bench/dpbench. */
__u32 bench_line_stride = 131;

SEC("xdp")
int lines_bench(struct xdp_md *ctx)
{
	__u32 n = bench_lines;
	__u64 sum = 0;

#pragma unroll
	for (int i = 0; i < BENCH_MAX_LINES; i++) {
		if (i < n) {
			__u32 key = i * 8 * bench_line_stride;
			__u64 *v = bpf_map_lookup_elem(&bench_scratch, &key);
			if (v)
				sum += READ_ONCE_U64(v);
		}
	}
	return sum == 0x5eed ? XDP_PASS : XDP_TX; /* never 0x5eed: the reads are kept */
}

/*
 * The scattered row's bound: encap_floor_plain_bench after one read of a
 * 16-bit entry at a random place in the first bench_random_entries entries
 * of bench_scratch (2 bytes an entry, as the compact bucket entries), the
 * place picked by a multiply-shift of the packet's source address and
 * ports. With the per-packet method's fresh flow each run, and as many
 * entries as the scattered row's table, it is what any mux pays that reads
 * one entry of such a table in the flows' random order: no program that
 * reads the table can cost less.
 */
__u32 bench_random_entries;

SEC("xdp")
int encap_floor_random_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	struct iphdr *ip = data + sizeof(struct ethhdr);

	if ((void *)(ip + 1) + sizeof(__u32) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__u32 ports = *(__u32 *)(ip + 1);
	__u32 i = ((__u64)((ip->saddr ^ ports) * 0x9e3779b1U) * bench_random_entries) >> 32;
	__u32 key = i >> 2;
	__u64 *w = bpf_map_lookup_elem(&bench_scratch, &key);
	if (!w)
		return XDP_ABORTED;
	if (*((volatile __u16 *)w + (i & 3)) == 0x5eed)
		return XDP_PASS; /* never 0x5eed: the read is kept */
	return encap_plain(ctx);
}

/*
 * The least a Beamer mux does for the beamer row's packet (issue 27: what
 * is left once the product's other work is gone), with none of the
 * product's checks, counters or indirections: the Ethernet and IPv4 shape
 * (IPv4, no options, TCP) and one VIP compared, the ports read, the flow
 * hash, the bucket's 16-bit entry and the server's word read from the
 * scratch array with inlined lookups (copyBucketsToScratch put the
 * instance's tables there), and the encapsulation with the 16-byte option
 * carrying generation and incarnation, fixed MACs. Anything else passes.
 * No program that forwards by Beamer's bucket table can do less.
 */
__be32 bench_min_vip;
__u32 bench_min_buckets;
__u32 bench_min_server_base; /* word of server id 0 in bench_scratch */
__be32 bench_min_generation;
__be32 bench_min_incarnation;

/* The moved-4 row's bound (beamer_minimal_moved4_bench) also reads the
 * bucket's side word (after the compact entries, as in the bucket table)
 * and the chain entry it names: entry r is words bench_min_chain_base + 2r
 * and + 2r + 1 (struct chain_entry, 16 bytes; research/bench/dpbench
 * copies the instance's chain table there). */
__u32 bench_min_chain_base;

/* The least an operated mux adds to it (beamer_minimal_counted_bench):
 * one per-CPU packet counter, and the server's next-hop MAC read from an
 * array by server id, a word a server (bench_min_mac_base + id). */
__u32 bench_min_mac_base;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bench_min_count SEC(".maps");

/* The previous owner i of a chain entry read as its two words (struct
 * chain_entry: n, pad, then the 16-bit ids from byte 2). */
INLINE __u16 chain_id(__u64 e0, __u64 e1, const int i)
{
	return i < 3 ? (__u16)(e0 >> (16 * (i + 1))) : (__u16)(e1 >> (16 * (i - 3)));
}

/* operated: beamer_minimal_counted_bench's additions. prev (constant):
 * the bucket moved and its chain entry names exactly prev previous owners
 * (anything else drops): the side word and the chain entry read, each
 * previous owner's server word read, their addresses and the time of the
 * change in the option, 16 + 4 * prev bytes. */
INLINE int beamer_minimal(struct xdp_md *ctx, const int operated, const int prev)
{
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) + sizeof(__u32) > (void *)(long)ctx->data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || *(__u8 *)ip != 0x45 || ip->protocol != IPPROTO_TCP ||
	    ip->daddr != bench_min_vip)
		return XDP_PASS;
	__u32 ports = bpf_ntohl(*(__u32 *)(ip + 1));
	__u32 index = bucket_of(flow_hash_ports(ip->saddr, ip->daddr, ports, IPPROTO_TCP), bench_min_buckets);
	__u32 key = index >> 2;
	__u64 *w = bpf_map_lookup_elem(&bench_scratch, &key);
	if (!w)
		return XDP_PASS;
	__u16 id = *((volatile __u16 *)w + (index & 3));
	__u64 bucket = 0;
	if (prev) {
		if (id != BUCKET_MOVED)
			return XDP_DROP;
		key = ((bench_min_buckets + 3) >> 2) + index; /* the side word */
		__u64 *s = bpf_map_lookup_elem(&bench_scratch, &key);
		if (!s)
			return XDP_DROP;
		bucket = READ_ONCE_U64(s);
		id = BUCKET_CURRENT(bucket);
	}
	if (id < SERVER_ID_MIN)
		return XDP_DROP;
	key = bench_min_server_base + id;
	__u64 *sw = bpf_map_lookup_elem(&bench_scratch, &key);
	if (!sw)
		return XDP_DROP;
	__u64 mac = 0x020202020202ULL;
	if (operated) {
		key = bench_min_mac_base + id;
		__u64 *m = bpf_map_lookup_elem(&bench_scratch, &key);
		if (!m)
			return XDP_DROP;
		mac = READ_ONCE_U64(m);
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&bench_min_count, &zero);
		if (n)
			*n += 1;
	}
	struct encap_params p = {.saddr = mux_addr, .daddr = SERVER_ADDR(READ_ONCE_U64(sw))};
	p.opt.type = BEAMER_OPT_TYPE;
	p.opt.len = BEAMER_OPT_FIXED + 4 * prev;
	p.opt.generation = bench_min_generation;
	p.opt.incarnation = bench_min_incarnation;
	if (prev) {
		key = bench_min_chain_base + 2 * (__u32)BUCKET_CHAIN(bucket);
		__u64 *c0 = bpf_map_lookup_elem(&bench_scratch, &key);
		key++;
		__u64 *c1 = bpf_map_lookup_elem(&bench_scratch, &key);
		if (!c0 || !c1)
			return XDP_DROP;
		__u64 e0 = READ_ONCE_U64(c0), e1 = prev > 3 ? READ_ONCE_U64(c1) : 0;
		if ((__u8)e0 != prev)
			return XDP_DROP;
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
			if (i < prev) {
				key = bench_min_server_base + chain_id(e0, e1, i);
				__u64 *pw = bpf_map_lookup_elem(&bench_scratch, &key);
				if (!pw)
					return XDP_DROP;
				p.opt.prev[i] = SERVER_ADDR(READ_ONCE_U64(pw));
			}
		}
		p.opt.changed = bpf_htonl(BUCKET_CHANGED(bucket));
	}
	struct ethhdr *out = xdp_encap_ipv4(ctx, &p, OUTER_LEN_WITH(prev));
	if (!out)
		return XDP_ABORTED;
	*(__u32 *)out->h_dest = (__u32)mac;
	*(__u16 *)(out->h_dest + 4) = (__u16)(mac >> 32);
	__builtin_memset(out->h_source, 0x04, ETH_ALEN);
	return XDP_TX;
}

SEC("xdp")
int beamer_minimal_bench(struct xdp_md *ctx)
{
	return beamer_minimal(ctx, 0, 0);
}

SEC("xdp")
int beamer_minimal_counted_bench(struct xdp_md *ctx)
{
	return beamer_minimal(ctx, 1, 0);
}

/*
 * The moved-4 row's bound: the least a Beamer mux does for the
 * beamer-moved4 row's packets, whose buckets all moved with 4 previous
 * owners — beamer_minimal_bench, and the bucket's side word, its chain
 * entry and the 4 previous owners' server words read from the scratch
 * array with inlined lookups, their addresses and the time of the change
 * in a 32-byte option.
 */
SEC("xdp")
int beamer_minimal_moved4_bench(struct xdp_md *ctx)
{
	return beamer_minimal(ctx, 0, 4);
}

/* An empty program: what a test run costs by itself. */
SEC("xdp")
int empty_bench(struct xdp_md *ctx)
{
	return XDP_TX;
}

/* ---- The IPv6 path ---- */

/*
 * The IPv6 path's benchmark wrapper (research/bench/dpbench ipv6.go): as
 * beamer_mux_bench, it gives each repetition another flow (bench_flows,
 * bench_order: the source address's last word and the source port, as
 * research/bench/dpbench benchFlow6 mirrors) and undoes the GUE-over-IPv6
 * encapsulation after each forwarded packet, so every repetition takes the
 * whole path. It calls the IPv6 program directly, where production frames
 * reach it by the IPv4 path's tail call (that call is in the per-packet
 * figure, not in this one).
 */

INLINE void rotate_flow6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
	struct tcphdr *tcp = (void *)(ip6 + 1);

	if (!bench_flows || (void *)(tcp + 1) > data_end)
		return;
	__u32 seq = bench_seq++;
	if (seq >= bench_flows)
		seq = bench_seq = 0, bench_seq++;
	__u32 i = bench_order(seq, bench_flows);
	ip6->saddr.in6_u.u6_addr32[3] = bpf_htonl(i >> 14);
	tcp->source = bpf_htons(1024 + (i & 0x3fff));
}

/* Strips IPv6 + UDP + GUE + private data (strip_outer above). */
INLINE int undo_gue6(struct xdp_md *ctx, const struct ethhdr *saved, int action)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct guehdr *g = data + sizeof(struct ethhdr) + GUE6_LEN_PLAIN - sizeof(struct guehdr);

	if ((void *)(g + 1) > data_end)
		return XDP_ABORTED;
	return strip_outer(ctx, saved, GUE6_LEN_PLAIN + (g->hlen & GUE_HLEN_MASK) * 4, action);
}

SEC("xdp")
int beamer_mux6_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	rotate_flow6(ctx);
	int action = beamer_mux6(ctx);
	if (action != XDP_TX && action != XDP_REDIRECT)
		return action;
	return undo_gue6(ctx, &saved, action);
}

/* ---- The Maglev rows' reference: the connection table of before (issue 27) ---- */

/*
 * The mux with the Maglev strategy's former connection table (the LRU
 * hash of bench/conntrack_lru_bench.h) instead of the current one, for the
 * bench rows maglev-lru beside maglev: everything else is the same
 * program. maglev_lru_bench is beamer_mux_bench (rotation, undo);
 * maglev_lru_single is beamer_mux for the per-packet method.
 */
SEC("xdp")
int maglev_lru_bench(struct xdp_md *ctx)
{
	bench_ct_lru = 1;
	int action = beamer_mux_bench(ctx);
	bench_ct_lru = 0;
	return action;
}

SEC("xdp")
int maglev_lru_single(struct xdp_md *ctx)
{
	bench_ct_lru = 1;
	int action = beamer_mux(ctx);
	bench_ct_lru = 0;
	return action;
}
