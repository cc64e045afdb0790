// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Beamer mux: an XDP program that forwards each TCP packet addressed to a
 * VIP to one server, keeping no per-connection state (Beamer §4, Fig. 7).
 *
 *   service port (<= 1024): bucket = flow hash scaled to B; the bucket's
 *     current server gets the packet, with an IP option naming the bucket's
 *     previous owners (most recent first), when it last changed hands and
 *     this mux's generation and incarnation, so servers can daisy-chain
 *     connections they do not know along the bucket's history.
 *   port > 1024: an MPTCP secondary subflow; the port is the server id.
 *
 * Anything not addressed to a VIP goes to the kernel untouched; packets to a
 * VIP that we cannot forward safely are dropped and counted by reason.
 *
 * Generations: the VIP record carries the generation of its tables, and the
 * daemon writes bucket words before it publishes the record naming the new
 * generation. The program reads the record first and the bucket after (the
 * bucket's address depends on the record), so the generation a packet carries
 * is never newer than the bucket that forwarded it.
 */
#include "include/defs.h"
#include "include/parse.h"
#include "include/flow_hash.h"
#include "include/wire.h"
#include "include/encap.h"
#include "include/nexthop.h"
#include "include/icmp_too_big.h"
#include "include/mux_maps.h"
#include "include/conntrack.h"

/* The mux's own address: source of every outer header. Set at load time. */
volatile const __be32 mux_addr;

/* What a strategy decided for one packet. */
struct decision {
	struct encap_params encap;
	int with_opt;
	int prev;    /* previous owners in the option */
	int forward; /* 1: encapsulate and send; 0: drop, the verdict says why */
	int also;    /* a detail counter counted with the verdict once sent (0: none) */
};

static const enum mux_counter parse_drop[] = {
	[PARSE_TRUNCATED] = MUX_DROP_TRUNCATED,
	[PARSE_BAD_HEADER] = MUX_DROP_BAD_HEADER,
	[PARSE_IP_OPTIONS] = MUX_DROP_IP_OPTIONS,
	[PARSE_FRAGMENT] = MUX_DROP_FRAGMENT,
	[PARSE_NOT_TCP] = MUX_DROP_NOT_TCP,
};

INLINE int drop(enum mux_counter why)
{
	mux_count(why);
	return XDP_DROP;
}

/* MPTCP secondary subflow: the destination port names the server. Active
 * and retired servers both accept: a retired server still owns subflows of
 * its remaining connections. */
INLINE int decide_by_server_id(void *servers, __u16 port, struct decision *d)
{
	__u64 w = server_word(servers, port);

	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	d->encap.daddr = SERVER_ADDR(w);
	d->with_opt = 0;
	d->forward = 1;
	return MUX_FWD_SERVER_ID;
}

/* The bucket word of the packet's bucket (for Maglev: its table entry), or
 * 0 with *why set when the VIP's table is missing. */
INLINE __u64 bucket_word(const struct vip_info *vip, struct iphdr *ip, struct tcphdr *tcp, int *why)
{
	__u32 table = vip->table;
	void *buckets = bpf_map_lookup_elem(&bucket_tables, &table);

	*why = MUX_DROP_NO_TABLE;
	if (!buckets)
		return 0;
	__u32 index = bucket_of(flow_hash(ip->saddr, ip->daddr, tcp->source, tcp->dest, IPPROTO_TCP), vip->buckets);
	__u64 *bw = bpf_map_lookup_elem(buckets, &index);
	if (!bw)
		return 0; /* B larger than the loaded table */
	*why = MUX_DROP_NO_OWNER;
	return READ_ONCE_U64(bw);
}

/* The previous owners of a moved bucket into the option: the chain entry
 * the bucket word names, each id turned into its server's address. The list
 * ends at the first id no longer in the server table (the table never names
 * one, see forwarding.Table.Validate; this is defence). Returns how many
 * were put. */
INLINE int put_history(__u32 table, void *servers, __u16 ref, struct beamer_opt *opt)
{
	void *chains = bpf_map_lookup_elem(&chain_tables, &table);
	__u32 key = ref;
	struct chain_entry *ce = chains ? bpf_map_lookup_elem(chains, &key) : NULL;
	int n = 0;

	if (!ce) {
		mux_count(MUX_CHAIN_MISSING);
		return 0;
	}
	__u8 len = ce->n;
#pragma unroll
	for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
		if (i < len && n == i) {
			__u64 w = server_word(servers, ce->ids[i]);
			if (w) {
				opt->prev[i] = SERVER_ADDR(w);
				n = i + 1;
			}
		}
	}
	return n;
}

/* Stable hashing: the bucket's current owner, with the bucket's previous
 * owners and the time of its latest change in the option. A bucket that
 * never moved (chain reference 0) reads nothing more than its word. */
INLINE int decide_by_bucket(const struct vip_info *vip, void *servers, struct iphdr *ip, struct tcphdr *tcp,
			    struct decision *d)
{
	int why;
	__u64 bucket = bucket_word(vip, ip, tcp, &why);

	if (!bucket)
		return why;

	__u16 current = BUCKET_CURRENT(bucket);
	if (!current)
		return MUX_DROP_NO_OWNER;
	__u64 cur = server_word(servers, current);
	if (!cur)
		return MUX_DROP_UNKNOWN_SERVER;

	int n = 0;
	__u16 ref = BUCKET_CHAIN(bucket);
	if (ref)
		n = put_history(vip->table, servers, ref, &d->encap.opt);

	d->encap.daddr = SERVER_ADDR(cur);
	d->encap.opt.type = BEAMER_OPT_TYPE;
	d->encap.opt.len = BEAMER_OPT_FIXED + 4 * n;
	d->encap.opt.hop = 0;
	d->encap.opt.flags = 0;
	d->encap.opt.changed = n ? bpf_htonl(BUCKET_CHANGED(bucket)) : 0;
	d->with_opt = 1;
	d->prev = n;
	d->forward = 1;
	if (n)
		d->also = MUX_FWD_WITH_PREVIOUS;
	return MUX_FWD_BUCKET;
}

/*
 * Maglev with connection tracking: a known connection goes to the server
 * remembered for it while that server is healthy — active, or retired and
 * draining its connections; a new one (a miss, or any SYN) goes to the
 * Maglev table's entry for its hash and is remembered,
 * unless the flood guard says this CPU has inserted enough this second.
 * No option: servers of a Maglev VIP do not daisy-chain.
 */
INLINE int decide_by_maglev(const struct vip_info *vip, void *servers, struct iphdr *ip, struct tcphdr *tcp,
			    struct decision *d)
{
	struct flow_key key = {
		.saddr = ip->saddr, .daddr = ip->daddr, .sport = tcp->source, .dport = tcp->dest, .proto = IPPROTO_TCP,
	};
	void *ct = conntrack_table();
	int syn = tcp->syn && !tcp->ack;
	int verdict = syn ? MUX_CT_SYN : MUX_CT_MISS;

	d->with_opt = 0;
	if (ct && !syn) {
		struct flow_entry *e = bpf_map_lookup_elem(ct, &key);
		if (e) {
			__u64 w = server_word(servers, e->server);
			if (w && SERVER_STATE(w) != SERVER_DOWN) {
				d->encap.daddr = SERVER_ADDR(w);
				d->forward = 1;
				return MUX_CT_HIT;
			}
			verdict = MUX_CT_STALE;
		}
	}

	int why;
	__u64 entry = bucket_word(vip, ip, tcp, &why);
	__u16 current = BUCKET_CURRENT(entry);
	if (!current)
		return why;
	__u64 w = server_word(servers, current);
	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	if (ct) {
		if (flood_allows_insert()) {
			struct flow_entry fresh = {.server = current};
			bpf_map_update_elem(ct, &key, &fresh, BPF_ANY);
		} else {
			mux_count(MUX_CT_FLOOD);
		}
	}
	d->encap.daddr = SERVER_ADDR(w);
	d->forward = 1;
	return verdict;
}

/* Bytes the encapsulation adds in front of the packet. */
INLINE int outer_len_of(const struct decision *d)
{
	return d->with_opt ? OUTER_LEN_WITH(d->prev) : OUTER_LEN_PLAIN;
}

/*
 * Sends the packet to d's server, or answers it: every packet is counted
 * exactly once, after its fate is known — the verdict when it leaves, a
 * drop reason or icmp_too_big otherwise. ip is the packet's (parsed) IPv4
 * header; it is read before the packet is touched.
 */
INLINE int transmit(struct xdp_md *ctx, struct decision *d, int verdict, struct iphdr *ip)
{
	struct nexthop_answer nh;
	int outer_len = outer_len_of(d);
	__u32 inner_tot = bpf_ntohs(ip->tot_len);
	__be16 frag = ip->frag_off;

	d->encap.saddr = mux_addr;
	switch (xdp_nexthop(ctx, d->encap.saddr, d->encap.daddr, &nh)) {
	case NEXTHOP_TX:
	case NEXTHOP_REDIRECT:
		break;
	case NEXTHOP_NO_NEIGH:
		return drop(MUX_DROP_NO_NEIGH);
	default:
		return drop(MUX_DROP_NO_ROUTE);
	}

	/* Too big once encapsulated. With DF the client does path MTU
	 * discovery: tell it the size that fits. Without DF it expects a
	 * router to fragment, which the mux cannot do (and fragments of it
	 * would be dropped here anyway, having no ports to hash): drop. */
	if (inner_tot + outer_len > nh.mtu) {
		if (!(frag & bpf_htons(IP_DF)))
			return drop(MUX_DROP_TOO_BIG);
		__u32 fits = nh.mtu > outer_len + IPV4_MIN_MTU ? nh.mtu - outer_len : IPV4_MIN_MTU;
		if (xdp_icmp_frag_needed(ctx, fits))
			return drop(MUX_DROP_ENCAP);
		mux_count(MUX_ICMP_TOO_BIG);
		return XDP_TX;
	}

	struct ethhdr *eth;
	eth = xdp_encap_ipv4(ctx, &d->encap, outer_len);
	if (!eth)
		return drop(MUX_DROP_ENCAP);
	__builtin_memcpy(eth->h_dest, nh.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh.smac, ETH_ALEN);

	mux_count(verdict);
	if (d->also)
		mux_count(d->also);
	if (nh.ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(nh.ifindex, 0);
}

SEC("xdp")
int beamer_mux(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = ipv4_after_eth(data, data_end);
	struct tcphdr *tcp;
	enum parse_verdict pv;

	if (!ip) {
		mux_count(MUX_PASS_NOT_IPV4);
		return XDP_PASS;
	}
	struct vip_info *vip = bpf_map_lookup_elem(&vips, &ip->daddr);
	if (!vip) {
		mux_count(MUX_PASS_NOT_VIP);
		return XDP_PASS;
	}

	/* Addressed to a VIP: from here on we forward it whole or drop it. */
	pv = check_ipv4_plain(ip, data_end - (void *)ip);
	if (pv == PARSE_OK)
		pv = parse_tcp_after(ip, data_end, &tcp);
	if (pv != PARSE_OK)
		return drop(parse_drop[pv]);

	__u32 table = vip->table;
	__u32 generation = vip->generation;
	__u32 incarnation = vip->incarnation;
	barrier();
	void *servers = bpf_map_lookup_elem(&server_tables, &table);
	if (!servers)
		return drop(MUX_DROP_NO_TABLE);

	struct decision d = {};
	__u16 port = bpf_ntohs(tcp->dest);
	int service = port >= vip->port_low && port <= vip->port_high;
	int verdict;

	/* Ports above 1024 name servers (MPTCP subflows) under Beamer; a
	 * Maglev mux knows nothing of that and hashes them like any flow. */
	if (port <= SERVICE_PORT_MAX && !service)
		verdict = MUX_DROP_CLOSED_PORT;
	else if (vip->strategy == STRATEGY_MAGLEV)
		verdict = decide_by_maglev(vip, servers, ip, tcp, &d);
	else if (vip->strategy != STRATEGY_BEAMER)
		verdict = MUX_DROP_BAD_STRATEGY;
	else if (port > SERVICE_PORT_MAX)
		verdict = decide_by_server_id(servers, port, &d);
	else
		verdict = decide_by_bucket(vip, servers, ip, tcp, &d);
	if (!d.forward)
		return drop(verdict);

	d.encap.opt.generation = bpf_htonl(generation);
	d.encap.opt.incarnation = bpf_htonl(incarnation);
	return transmit(ctx, &d, verdict, ip);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifdef BEAMER_BENCH
#include "bench/mux_bench.h"
#endif
