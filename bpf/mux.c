// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Beamer mux: an XDP program that forwards each TCP or UDP packet
 * addressed to a VIP to one server. This file parses, finds the VIP, checks
 * the port, dispatches once on the VIP's strategy and transmits; each
 * strategy's decision is its own header, bpf/strategy/NAME.h
 * (docs/control-plane.md, "The strategy frame").
 *
 * Ports (bpf/include/ports.h): a VIP forwards its service ports, per
 * protocol, and for TCP its instance's MPTCP server-id range, whose port
 * names the server (a secondary subflow); nothing else.
 *
 * Strategy beamer keeps no per-connection state (Beamer §4, Fig. 7): the
 * bucket = flow hash scaled to B; the bucket's current server gets the
 * packet, with an IP option naming the bucket's previous owners (most
 * recent first), when it last changed hands and this mux's generation and
 * incarnation, so servers can daisy-chain connections they do not know
 * along the bucket's history.
 *
 * QUIC (bpf/include/quic.h): on an instance with the QUIC option, a UDP
 * packet to a QUIC port whose connection id names a server goes to it.
 * ICMP and ICMPv6 (bpf/include/icmp_steer.h): echo requests by the VIP's
 * policy; a frag needed or Packet Too Big goes where the connection it
 * quotes goes.
 *
 * IPv6 (bpf/include/mux6.h): the same body, mux_path below, in a program
 * of its own that the IPv4 program tail-calls for frames that are not
 * IPv4; only the decision and the transmit are the family's own.
 *
 * Anything not addressed to a VIP goes to the kernel untouched; packets to a
 * VIP that we cannot forward safely are dropped and counted by reason.
 *
 * Generations: the VIP record's version word carries the generation of its
 * tables, and the daemon writes bucket words before it stores the version
 * naming the new generation. The program loads the version first and the
 * bucket after (a compiler barrier keeps the order; loads are not reordered
 * with loads on the CPUs we run on), so the generation a packet carries is
 * never newer than the bucket that forwarded it.
 */
#include "include/defs.h"
#ifdef BEAMER_BENCH
#include "bench/scratch.h"
#endif
#include "include/parse.h"
#include "include/flow.h"
#include "include/flow_hash.h"
#include "include/wire.h"
#include "include/encap.h"
#include "include/gue.h"
#include "include/nexthop.h"
#include "include/icmp_too_big.h"
#include "include/mux_maps.h"
#include "include/vips.h"
#include "include/ports.h"
#include "include/quic.h"
#include "include/icmp_steer.h"
#include "include/decision.h"
#include "include/vip_traffic.h"
#include "include/capture.h"
#include "include/mux_addr.h"
#include "include/mux_verdict.h"
#include "include/mux_transmit.h"
#include "include/mux6.h"
#include "strategy/beamer.h"
#include "strategy/maglev.h"
#include "strategy/prism.h"
#include "strategy/awfd.h"
#include "strategy/cheetah.h"
#include "include/mux_send4.h"
#include "include/mux_fast.h"
#include "strategy/maglev_fast.h"

/* The one dispatch on the VIP's strategy (bpf/strategy/NAME.h). tcp is the
 * TCP header, or NULL (UDP, or an ICMP message steered by its quote). */
INLINE int decide(struct xdp_md *ctx, const struct vip_info *vip, void *servers, const struct flow *f,
		  struct tcphdr *tcp, struct decision *d)
{
	switch (vip->strategy) {
	case STRATEGY_BEAMER:
		return decide_beamer(vip, servers, f, d);
	case STRATEGY_MAGLEV:
		return decide_maglev(vip, servers, f, d);
	case STRATEGY_PRISM:
		return decide_prism(vip, servers, f, d);
	case STRATEGY_AWFD:
		return decide_awfd(vip, servers, f, d);
	case STRATEGY_CHEETAH:
		return decide_cheetah(ctx, vip, servers, f, tcp, d);
	default:
		return MUX_DROP_BAD_STRATEGY;
	}
}

/* Where a packet of flow f goes, by port: an MPTCP subflow to its server,
 * a QUIC packet to the server its connection id names, a service's packet
 * by the strategy; anything else to the VIP is dropped. */
INLINE int route(struct xdp_md *ctx, const struct vip_info *vip, void *servers, const struct flow *f,
		 struct tcphdr *tcp, struct iphdr *ip, int quic, struct decision *d)
{
	switch (port_class(vip, f)) {
	case PORT_SERVER_ID:
		return decide_by_server_id(servers, flow_dport(f), d);
	case PORT_SERVICE:
		break;
	default:
		return MUX_DROP_CLOSED_PORT;
	}
	if (quic && f->proto == IPPROTO_UDP && (vip->flags & VIP_F_QUIC) && in_range(vip->quic_ports, flow_dport(f))) {
		void *data_end = (void *)(long)ctx->data_end;
		__u16 id = quic_server_id(vip, ip, data_end);
		__u64 w = id ? server_word(servers, id) : 0;
		if (w) {
			decision_to(d, w);
			d->with_opt = 0;
			d->forward = 1;
			return MUX_FWD_QUIC_CID;
		}
		int verdict = decide(ctx, vip, servers, f, tcp, d);
		if (d->forward && !d->also)
			d->also = MUX_QUIC_BY_BUCKET;
		return verdict;
	}
	return decide(ctx, vip, servers, f, tcp, d);
}

/* An ICMP or ICMPv6 message to a VIP: an echo request by the VIP's policy
 * (an XDP action), a frag needed or Packet Too Big to be steered as its
 * quoted connection's packet (-1, f filled), anything else dropped. */
INLINE int mux_icmp(struct xdp_md *ctx, const struct vip_info *vip, void *l3, struct flow *f, const int is_ipv6)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *quote;

	switch (icmp_classify(l3, data_end, f->l4_off, f, &quote, is_ipv6)) {
	case ICMP_KIND_TOO_BIG:
		return -1;
	case ICMP_KIND_ECHO:
		break;
	default:
		return drop(vip->stats, MUX_DROP_ICMP);
	}
	if (vip->flags & VIP_F_ECHO_ANSWER) {
		if (!icmp_csum_ok(l3, data_end, f->l4_off, is_ipv6))
			return drop(vip->stats, MUX_DROP_ICMP_BAD_CHECKSUM);
		mux_count(MUX_ICMP_ECHO_ANSWERED);
		return xdp_echo_reply(ctx, is_ipv6);
	}
	if (vip->flags & VIP_F_ECHO_PASS) {
		mux_count(MUX_PASS_ICMP_ECHO);
		return XDP_PASS;
	}
	return drop(vip->stats, MUX_DROP_ICMP_ECHO);
}

/* The IPv4 decision and transmit: the strategy's, by port (route), then
 * IP-in-IP or GUE over IPv4 (transmit). */
INLINE int forward4(struct xdp_md *ctx, const struct vip_info *vip, void *servers, const struct flow *f,
		    struct tcphdr *tcp, struct iphdr *ip, int icmp, __u64 version)
{
	struct decision d = {};
	int verdict = route(ctx, vip, servers, f, tcp, ip, !icmp, &d);

	return forward4_decided(ctx, vip, f, &d, verdict, ip, icmp, version);
}

/* The IPv6 decision and transmit (mux6.h): strategy beamer by port
 * (route6), then GUE over IPv6 (transmit6). */
INLINE int forward6(struct xdp_md *ctx, const struct vip_info *vip, void *servers, void *servers6,
		    const struct flow *f, struct ipv6hdr *ip6, int icmp, __u64 version)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct decision6 d = {};
	__u32 hash = flow_hash_of(f); /* the bucket's, and the UDP source port's */
	int verdict = route6(vip, servers, servers6, f, ip6, data_end, hash, !icmp, &d);
	if (!d.forward)
		return drop(vip->stats, verdict);
	if (icmp)
		d.also = MUX_FWD_ICMP_FRAG_NEEDED;
	d.encap.opt.generation = bpf_htonl((__u32)version);
	d.encap.opt.incarnation = bpf_htonl((__u32)(version >> 32));
	__u32 inner_tot = l3_tot_len(ip6, 1);
	d.new_flow = flow_is_syn(f);
	d.vip_stat = vip->stats;
	return transmit6(ctx, &d, verdict, inner_tot, hash, vip->gue_port);
}

/*
 * The mux's one path, for both families (is_ipv6 a constant at each call:
 * beamer_mux and beamer_mux6 below each compile it as if the other family
 * did not exist), from the IP header l3 on: find the VIP, parse the packet
 * once into the flow every strategy reads (an ICMP message is answered
 * here, or steered as its quoted connection's flow), read the VIP's tables
 * at its generation, then decide and transmit in the family's own way.
 */
INLINE int mux_path(struct xdp_md *ctx, void *l3, const int is_ipv6)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = l3;
	struct iphdr *ip = l3;
	struct vip_info *vip = vip_find(is_ipv6 ? ip6->daddr.in6_u.u6_addr32 : &ip->daddr, is_ipv6);

	if (!vip) {
		mux_count(is_ipv6 ? MUX_PASS_NOT_VIP6 : MUX_PASS_NOT_VIP);
		return XDP_PASS;
	}

	/* Addressed to a VIP: from here on we forward it whole or drop it.
	 * The most common IPv4 packet first (mux_fast.h), straight-line. */
	if (!is_ipv6) {
		int action;
		if (mux_fast4(ctx, ip, vip, &action))
			return action;
		if (maglev_fast4(ctx, ip, vip, &action)) /* bpf/strategy/maglev_fast.h */
			return action;
	}
	struct tcphdr *tcp = NULL;
	struct flow f = {};
	int icmp = 0;
	enum parse_verdict pv = parse_flow(l3, data_end, data_end - l3, &f, &tcp, is_ipv6);
	if (pv == PARSE_ICMP) {
		int action = mux_icmp(ctx, vip, l3, &f, is_ipv6);
		if (action >= 0)
			return action;
		icmp = 1; /* f is the connection the message quotes */
		pv = PARSE_OK;
	}
	if (pv != PARSE_OK)
		return drop(vip->stats, parse_drop[pv]);
	if (is_ipv6 && vip->strategy != STRATEGY_BEAMER)
		return drop(vip->stats, MUX_DROP_BAD_STRATEGY);
	if (is_ipv6 && vip->encap != ENCAP_GUE)
		return drop(vip->stats, MUX_DROP_ENCAP6);

	__u64 version = READ_ONCE_U64(&vip->version);
	__u32 table = vip->table;
	barrier();
	void *servers = bpf_map_lookup_elem(&server_tables, &table);
	if (is_ipv6) {
		void *servers6 = bpf_map_lookup_elem(&server6_tables, &table);
		if (!servers || !servers6)
			return drop(vip->stats, MUX_DROP_NO_TABLE);
		return forward6(ctx, vip, servers, servers6, &f, ip6, icmp, version);
	}
	if (!servers)
		return drop(vip->stats, MUX_DROP_NO_TABLE);
	return forward4(ctx, vip, servers, &f, tcp, ip, icmp, version);
}

/* The IPv6 path, from the Ethernet header on: a program of its own, which
 * the IPv4 path tail-calls for every frame that is not IPv4 (mux6_prog), so
 * it adds no code, register or stack to the IPv4 path and has the whole
 * BPF stack to itself. */
SEC("xdp")
int beamer_mux6(struct xdp_md *ctx)
{
	void *ip6 = l3_after_eth((void *)(long)ctx->data, (void *)(long)ctx->data_end, 1);

	if (!ip6) {
		mux_count(MUX_PASS_NOT_IPV4);
		return XDP_PASS;
	}
	return mux_path(ctx, ip6, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct xdp_md *));
} mux6_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_mux6},
};

SEC("xdp")
int beamer_mux(struct xdp_md *ctx)
{
	capture_xdp(ctx, CAPTURE_MUX_RX); /* bpf/include/capture.h */
	void *ip = l3_after_eth((void *)(long)ctx->data, (void *)(long)ctx->data_end, 0);

	if (!ip) {
		/* IPv6 (beamer_mux6), or passed on should the tail call fail
		 * (it cannot once loaded: the array is filled at load). */
		bpf_tail_call(ctx, &mux6_prog, 0);
		mux_count(MUX_PASS_NOT_IPV4);
		return XDP_PASS;
	}
	return mux_path(ctx, ip, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
