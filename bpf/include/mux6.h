/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's IPv6 decision and transmit (issue 16). The IPv6 path is a
 * program of its own (beamer_mux6 in mux.c), tail-called only for frames
 * that are not IPv4, and runs the same body as the IPv4 path (mux.c
 * mux_path: parse, VIP, ICMP, tables); what is IPv6's alone is here. Every
 * IPv6 VIP is encapsulated in GUE over an IPv6 outer header (gue.h; IP-in-IP
 * with the option has no IPv6 form, docs/wire-format.md):
 *
 *   decide      strategy beamer alone (the control plane refuses IPv6 for
 *               the others; mux_path counts a record naming another as a
 *               drop): MPTCP server-id ports by server id, QUIC packets by
 *               the server id in their connection id (quic.h), service
 *               ports by bucket with the bucket's previous owners as
 *               16-byte addresses;
 *   transmit    next hop by bpf_fib_lookup AF_INET6 (nexthop.h), size
 *               check (ICMPv6 Packet Too Big back to the client,
 *               icmp_too_big.h), xdp_encap_gue6, XDP_TX or redirect.
 */
#ifndef BEAMER_MUX6_H
#define BEAMER_MUX6_H

#include "defs.h"
#include "parse.h"
#include "flow.h"
#include "vips6.h"
#include "nexthop.h"
#include "icmp_too_big.h"
#include "quic.h"
#include "gue.h"
#include "ports.h"
#include "decision.h"
#include "mux_maps.h"
#include "vip_traffic.h"
#include "mux_addr.h"
#include "mux_verdict.h"
#include "mux_transmit.h"


/* What the IPv6 decision fills: the outer header's addresses and the
 * private data (struct beamer_opt6). */
struct decision6 {
	struct encap6_params encap;
	int with_opt;
	int prev;
	int forward;
	int also;
	__u16 stat;    /* as struct decision's (bpf/include/vip_traffic.h) */
	__u16 vip_stat;
	__u8 new_flow;
};

/* MPTCP secondary subflow to an IPv6 VIP: the port names the server. */
INLINE int decide6_by_server_id(void *servers, void *servers6, __u16 port, struct decision6 *d)
{
	__u64 w = server_word(servers, port);

	if (!server6_addr(servers6, port, w, (struct in6_addr *)d->encap.daddr))
		return MUX_DROP_UNKNOWN_SERVER;
	d->stat = SERVER_STAT(w);
	d->with_opt = 0;
	d->forward = 1;
	return MUX_FWD_SERVER_ID;
}

/* Stable hashing as decide_by_bucket (bpf/strategy/beamer.h), with the
 * servers' IPv6 addresses: the bucket's owner, its previous owners (most
 * recent first, the list ending at the first id without an address) and,
 * for UDP, the owner again at the end (BEAMER_OPT_F_RETURN). */
INLINE int decide6_by_bucket(const struct vip_info *vip, void *servers, void *servers6, const struct flow *f,
			     __u32 hash, struct decision6 *d)
{
	int why;
	__u64 bucket = bucket_word_of_hash(vip, hash, &why);

	if (!bucket)
		return why;
	__u16 current = BUCKET_CURRENT(bucket);
	if (!current)
		return MUX_DROP_NO_OWNER;
	struct in6_addr cur;
	__u64 cw = server_word(servers, current);
	if (!server6_addr(servers6, current, cw, &cur))
		return MUX_DROP_UNKNOWN_SERVER;
	d->stat = SERVER_STAT(cw);

	int n = 0;
	__u16 ref = BUCKET_CHAIN(bucket);
	if (ref) {
		__u32 table = vip->table;
		void *chains = bpf_map_lookup_elem(&chain_tables, &table);
		__u32 key = ref;
		struct chain_entry *ce = chains ? bpf_map_lookup_elem(chains, &key) : NULL;
		if (!ce) {
			mux_count(MUX_CHAIN_MISSING);
		} else {
			__u8 len = ce->n;
#pragma unroll
			for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
				if (i < len && n == i) {
					__u16 id = ce->ids[i];
					if (server6_addr(servers6, id, server_word(servers, id),
							 (struct in6_addr *)d->encap.opt.prev[i]))
						n = i + 1;
				}
			}
		}
	}
	__u8 flags = 0;
	if (n && f->proto == IPPROTO_UDP) {
		if (n > BEAMER_MAX_CHAIN - 1)
			n = BEAMER_MAX_CHAIN - 1;
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++)
			if (i == n)
				__builtin_memcpy(d->encap.opt.prev[i], &cur, 16);
		n++;
		flags = BEAMER_OPT_F_RETURN;
	}
	__builtin_memcpy(d->encap.daddr, &cur, 16);
	d->encap.opt.type = BEAMER_OPT_TYPE;
	d->encap.opt.len = BEAMER_OPT_FIXED + 16 * n;
	d->encap.opt.hop = 0;
	d->encap.opt.flags = flags;
	d->encap.opt.changed = n ? bpf_htonl(BUCKET_CHANGED(bucket)) : 0;
	d->with_opt = 1;
	d->prev = n;
	d->forward = 1;
	if (n)
		d->also = MUX_FWD_WITH_PREVIOUS;
	return MUX_FWD_BUCKET;
}

/* Sends the IPv6 packet to d's server in GUE over IPv6. Counted once. */
INLINE int transmit6(struct xdp_md *ctx, struct decision6 *d, int verdict, __u32 inner_tot, __u32 hash,
		     __u16 gue_port)
{
	struct nexthop_answer nh;
	int outer_len = d->with_opt ? GUE6_LEN_WITH(d->prev) : GUE6_LEN_PLAIN;

#pragma unroll
	for (int i = 0; i < 4; i++)
		d->encap.saddr[i] = mux_addr6[i];
	if (!(d->encap.saddr[0] | d->encap.saddr[1] | d->encap.saddr[2] | d->encap.saddr[3]))
		return drop(MUX_DROP_NO_ADDR6);
	int why = nexthop_drop(xdp_nexthop(ctx, d->encap.saddr, d->encap.daddr, 1, &nh));
	if (why)
		return drop(why);
	/* Too big once encapsulated: IPv6 routers never fragment and the mux
	 * cannot, so the client is told the size that fits (RFC 8201). */
	if (inner_tot + outer_len > nh.mtu) {
		__u32 fits = nh.mtu > outer_len + IPV6_MIN_MTU ? nh.mtu - outer_len : IPV6_MIN_MTU;
		/* Never an ICMPv6 error about an ICMPv6 error (RFC 4443 2.4). */
		if (d->also == MUX_FWD_ICMP_FRAG_NEEDED || inner_tot < ICMP6_PTB_QUOTE || xdp_icmp_too_big(ctx, fits, 1))
			return drop(MUX_DROP_TOO_BIG);
		mux_count(MUX_ICMP_TOO_BIG);
		vip_traffic_drop(MUX_ICMP_TOO_BIG);
		return XDP_TX;
	}

	struct ethhdr *eth = xdp_encap_gue6(ctx, &d->encap, outer_len, bpf_htons(GUE_SPORT(hash)), bpf_htons(gue_port));
	if (!eth)
		return drop(MUX_DROP_ENCAP);
	return transmit_out(ctx, eth, &nh, verdict, d->also, d->vip_stat, d->stat, inner_tot, d->new_flow, 1, 1);
}

/*
 * Where an IPv6 packet of flow f goes, by port (mux.c route's rules): an
 * MPTCP subflow to its server, a QUIC packet (not an ICMP message: quic 0)
 * to the server its connection id names, a service's packet by bucket;
 * anything else to the VIP is dropped.
 */
INLINE int route6(const struct vip_info *vip, void *servers, void *servers6, const struct flow *f,
		  struct ipv6hdr *ip6, void *data_end, __u32 hash, int quic, struct decision6 *d)
{
	switch (port_class(vip, f)) {
	case PORT_SERVER_ID:
		return decide6_by_server_id(servers, servers6, flow_dport(f), d);
	case PORT_SERVICE:
		break;
	default:
		return MUX_DROP_CLOSED_PORT;
	}
	if (quic && f->proto == IPPROTO_UDP && (vip->flags & VIP_F_QUIC) && in_range(vip->quic_ports, flow_dport(f))) {
		/* QUIC: the server its connection id names (quic.h), no
		 * private data; else by bucket, counted. */
		__u8 *q = (void *)ip6 + (f->l4_off & 0x1ff) + sizeof(struct udphdr);
		__u16 id = quic_server_id_at(vip, q, data_end);
		__u64 qw = id ? server_word(servers, id) : 0;
		if (id && server6_addr(servers6, id, qw, (struct in6_addr *)d->encap.daddr)) {
			d->stat = SERVER_STAT(qw);
			d->forward = 1;
			return MUX_FWD_QUIC_CID;
		}
		int verdict = decide6_by_bucket(vip, servers, servers6, f, hash, d);
		if (d->forward && !d->also)
			d->also = MUX_QUIC_BY_BUCKET;
		return verdict;
	}
	return decide6_by_bucket(vip, servers, servers6, f, hash, d);
}

#endif
