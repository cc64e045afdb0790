/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's IPv6 path (issue 16): a program of its own, tail-called only
 * for frames that are not IPv4, so the IPv4 path runs exactly the code it
 * ran before. Every IPv6 VIP is encapsulated in GUE over an IPv6 outer header
 * (gue.h; IP-in-IP with the option has no IPv6 form, docs/wire-format.md):
 *
 *   parse       fixed header + bounded extension headers (parse6.h), then
 *               the flow with folded addresses (flow6.h);
 *   VIP         vip6_front -> the shared VIP records (vips6.h);
 *   decide      strategy beamer alone (the control plane refuses IPv6 for
 *               the others; a record naming another is a counted drop):
 *               MPTCP server-id ports by server id, QUIC packets by the
 *               server id in their connection id (quic.h), service ports by
 *               bucket with the bucket's previous owners as 16-byte
 *               addresses;
 *   transmit    next hop by bpf_fib_lookup AF_INET6 (nexthop.h), size
 *               check (ICMPv6 Packet Too Big back to the client,
 *               icmp_too_big.h), xdp_encap_gue6, XDP_TX or redirect.
 *
 * ICMPv6 to a VIP: echo requests by the VIP's echo policy, as for IPv4; a
 * Packet Too Big goes where the connection it quotes goes (icmp6_steer.h,
 * counted fwd_icmp_frag_needed beside the verdict); every other message is
 * dropped and counted.
 */
#ifndef BEAMER_MUX6_H
#define BEAMER_MUX6_H

#include "defs.h"
#include "parse6.h"
#include "flow6.h"
#include "vips6.h"
#include "nexthop.h"
#include "icmp_too_big.h"
#include "icmp6_steer.h"
#include "icmp_steer.h"
#include "quic.h"
#include "gue.h"
#include "ports.h"
#include "decision.h"
#include "mux_maps.h"
#include "vip_traffic.h"
#include "capture.h"
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

/* Is an ICMPv6 message's checksum right (issue 23)? Over the pseudo-header
 * (addresses, upper-layer length, next header 58) and the message at l4_off
 * from ip6 to the end of the payload. An echo request with a wrong one is
 * not answered. */
INLINE int icmp6_csum_ok(struct ipv6hdr *ip6, void *data_end, __u32 l4_off)
{
	__u32 end = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);

	if (l4_off < sizeof(*ip6) || l4_off > 512 || end < l4_off)
		return 0;
	__u32 len = end - l4_off;
	__u64 sum = csum_addr(ip6->saddr.in6_u.u6_addr32, 4) + csum_addr(ip6->daddr.in6_u.u6_addr32, 4) +
		    bpf_htonl(len) + bpf_htonl(IPPROTO_ICMPV6);
	__s64 s = csum_add_bytes((void *)ip6 + l4_off, data_end, len, sum);
	return s >= 0 && csum_fold64((__u64)s) == 0;
}

/* An ICMPv6 message to an IPv6 VIP: an echo request by the VIP's policy
 * (an XDP action), a Packet Too Big to be steered as its quoted
 * connection's packet (-1, f filled), anything else dropped. */
INLINE int mux6_icmp(struct xdp_md *ctx, const struct vip_info *vip, struct ipv6hdr *ip6, struct flow *f)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *quote;

	switch (icmp6_classify(ip6, data_end, f->l4_off, f, &quote)) {
	case ICMP6_KIND_TOO_BIG:
		return -1;
	case ICMP6_KIND_ECHO:
		break;
	default:
		return drop(MUX_DROP_ICMP);
	}
	if (vip->flags & VIP_F_ECHO_ANSWER) {
		if (!icmp6_csum_ok(ip6, data_end, f->l4_off))
			return drop(MUX_DROP_ICMP_BAD_CHECKSUM);
		mux_count(MUX_ICMP_ECHO_ANSWERED);
		return xdp_echo_reply(ctx, 1);
	}
	if (vip->flags & VIP_F_ECHO_PASS) {
		mux_count(MUX_PASS_ICMP_ECHO);
		return XDP_PASS;
	}
	return drop(MUX_DROP_ICMP_ECHO);
}

/* The IPv6 path, from the Ethernet header on: a program of its own, which
 * the IPv4 path tail-calls for every frame that is not IPv4 (mux6_prog), so
 * it adds no code, register or stack to the IPv4 path and has the whole
 * BPF stack to itself. */
SEC("xdp")
int beamer_mux6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = ipv6_after_eth(data, data_end);

	if (!ip6) {
		mux_count(MUX_PASS_NOT_IPV4);
		return XDP_PASS;
	}
	struct vip_info *vip = vip_find(ip6->daddr.in6_u.u6_addr32, 1);
	if (!vip) {
		mux_count(MUX_PASS_NOT_VIP6);
		return XDP_PASS;
	}
	vip_traffic_seen(vip);

	struct tcphdr *tcp = NULL;
	struct flow f = {};
	int icmp = 0;
	int pv = parse_flow6(ip6, data_end, data_end - (void *)ip6, &f, &tcp);
	if (pv == PARSE_ICMP6) {
		int action = mux6_icmp(ctx, vip, ip6, &f);
		if (action >= 0)
			return action;
		icmp = 1; /* a Packet Too Big: f is the connection it quotes */
		pv = PARSE_OK;
	}
	switch (pv) {
	case PARSE_OK:
		break;
	case PARSE_TRUNCATED:
		return drop(MUX_DROP_TRUNCATED);
	case PARSE_BAD_HEADER:
		return drop(MUX_DROP_BAD_HEADER);
	case PARSE_FRAGMENT:
		return drop(MUX_DROP_FRAGMENT);
	case PARSE_EXT_CHAIN:
		return drop(MUX_DROP_EXT_HEADERS);
	default:
		return drop(MUX_DROP_NOT_TCP);
	}
	if (vip->strategy != STRATEGY_BEAMER)
		return drop(MUX_DROP_BAD_STRATEGY);
	if (vip->encap != ENCAP_GUE)
		return drop(MUX_DROP_ENCAP6);

	__u64 version = READ_ONCE_U64(&vip->version);
	__u32 table = vip->table;
	__u16 gue_port = vip->gue_port;
	barrier();
	void *servers = bpf_map_lookup_elem(&server_tables, &table);
	void *servers6 = bpf_map_lookup_elem(&server6_tables, &table);
	if (!servers || !servers6)
		return drop(MUX_DROP_NO_TABLE);

	struct decision6 d = {};
	__u32 hash = flow_hash_of(&f); /* the bucket's, and the UDP source port's */
	int verdict;
	switch (port_class(vip, &f)) {
	case PORT_SERVER_ID:
		verdict = decide6_by_server_id(servers, servers6, flow_dport(&f), &d);
		break;
	case PORT_SERVICE:
		if (!icmp && f.proto == IPPROTO_UDP && (vip->flags & VIP_F_QUIC) && in_range(vip->quic_ports, flow_dport(&f))) {
			/* QUIC: the server its connection id names (quic.h), no
			 * private data; else by bucket, counted. */
			__u8 *q = (void *)ip6 + (f.l4_off & 0x1ff) + sizeof(struct udphdr);
			__u16 id = quic_server_id_at(vip, q, data_end);
			__u64 qw = id ? server_word(servers, id) : 0;
			if (id && server6_addr(servers6, id, qw, (struct in6_addr *)d.encap.daddr)) {
				d.stat = SERVER_STAT(qw);
				d.forward = 1;
				verdict = MUX_FWD_QUIC_CID;
				break;
			}
			verdict = decide6_by_bucket(vip, servers, servers6, &f, hash, &d);
			if (d.forward && !d.also)
				d.also = MUX_QUIC_BY_BUCKET;
			break;
		}
		verdict = decide6_by_bucket(vip, servers, servers6, &f, hash, &d);
		break;
	default:
		verdict = MUX_DROP_CLOSED_PORT;
	}
	if (!d.forward)
		return drop(verdict);
	if (icmp)
		d.also = MUX_FWD_ICMP_FRAG_NEEDED;
	d.encap.opt.generation = bpf_htonl((__u32)version);
	d.encap.opt.incarnation = bpf_htonl((__u32)(version >> 32));
	__u32 inner_tot = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
	d.new_flow = flow_is_syn(&f);
	d.vip_stat = vip->stats;
	return transmit6(ctx, &d, verdict, inner_tot, hash, gue_port);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct xdp_md *));
} mux6_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_mux6},
};

/* Frames that are not IPv4 go to the IPv6 path; should the tail call fail
 * (it cannot once loaded: the array is filled at load), they pass. */
INLINE int mux_not_ipv4(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &mux6_prog, 0);
	mux_count(MUX_PASS_NOT_IPV4);
	return XDP_PASS;
}

#endif
