/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The IPv4 mux's transmit (bpf/mux.c's general path and mux_fast.h's
 * straight-line one): a decision taken at the VIP's version is dropped or
 * sent, IP-in-IP or GUE over IPv4 by the VIP's encapsulation, every packet
 * counted once after its fate is known (mux_transmit.h).
 */
#ifndef BEAMER_MUX_SEND4_H
#define BEAMER_MUX_SEND4_H

#include "defs.h"
#include "flow.h"
#include "flow_hash.h"
#include "wire.h"
#include "encap.h"
#include "gue.h"
#include "nexthop.h"
#include "icmp_too_big.h"
#include "decision.h"
#include "mux_maps.h"
#include "mux_addr.h"
#include "mux_verdict.h"
#include "mux_transmit.h"
#include "vip_traffic.h"

/* Bytes the encapsulation adds in front of the packet: IP-in-IP, or for a
 * GUE VIP the same plus its UDP and GUE headers (gue.h: the private data
 * is the option's bytes). */
INLINE int outer_len_of(const struct decision *d, const int gue)
{
	int len = d->with_opt ? OUTER_LEN_WITH(d->prev) : OUTER_LEN_PLAIN;
	return gue ? len + GUE4_EXTRA : len;
}

/* Too big once encapsulated (inner + outer_len > mtu). With DF (frag, the
 * inner header's fragment word) the client does path MTU discovery: tell
 * it the size that fits. Without DF it expects a router to fragment, which
 * the mux cannot do (and fragments of it would be dropped here anyway,
 * having no ports to hash): drop. */
INLINE int too_big4(struct xdp_md *ctx, __u16 vip_stat, __be16 frag, int outer_len, __u32 mtu)
{
	if (!(frag & bpf_htons(IP_DF)))
		return drop(vip_stat, MUX_DROP_TOO_BIG);
	__u32 fits = mtu > outer_len + IPV4_MIN_MTU ? mtu - outer_len : IPV4_MIN_MTU;
	if (xdp_icmp_too_big(ctx, fits, 0))
		return drop(vip_stat, MUX_DROP_ENCAP);
	mux_count(MUX_ICMP_TOO_BIG);
	vip_traffic_drop(vip_stat, MUX_ICMP_TOO_BIG);
	return XDP_TX;
}

/*
 * Sends the packet to d's server, or answers it: every packet is counted
 * exactly once, after its fate is known — the verdict when it leaves, a
 * drop reason or icmp_too_big otherwise. ip is the packet's (parsed) IPv4
 * header; it is read before the packet is touched. gue is a constant at
 * each call (transmit below), so the IP-in-IP path is compiled as if GUE
 * did not exist; sport and dport are GUE's (network order).
 */
INLINE int transmit_as(struct xdp_md *ctx, struct decision *d, int verdict, struct iphdr *ip, const int gue,
		       __be16 sport, __be16 dport)
{
	struct nexthop_answer nh;
	int outer_len = outer_len_of(d, gue);
	__u32 inner_tot = bpf_ntohs(ip->tot_len);
	__be16 frag = ip->frag_off;

	d->encap.saddr = mux_addr;
	int why = nexthop_drop(xdp_nexthop(ctx, &d->encap.saddr, &d->encap.daddr, 0, &nh));
	if (why)
		return drop(d->vip_stat, why);

	if (inner_tot + outer_len > nh.mtu)
		return too_big4(ctx, d->vip_stat, frag, outer_len, nh.mtu);

	struct ethhdr *eth;
	if (gue)
		eth = xdp_encap_gue4(ctx, &d->encap, outer_len, sport, dport);
	else
		eth = xdp_encap_ipv4(ctx, &d->encap, outer_len);
	if (!eth)
		return drop(d->vip_stat, MUX_DROP_ENCAP);
	return transmit_out(ctx, eth, &nh, verdict, d->also, d->vip_stat, d->stat, inner_tot, d->new_flow, gue, 0);
}

/* The VIP's encapsulation (record field, in the cache line already read)
 * picks IP-in-IP or GUE, whose UDP source port is the flow's hash
 * (gue.h GUE_SPORT). */
INLINE int transmit(struct xdp_md *ctx, const struct vip_info *vip, const struct flow *f, struct decision *d,
		    int verdict, struct iphdr *ip)
{
	d->new_flow = flow_is_syn(f);
	d->vip_stat = vip->stats;
	if (vip->encap == ENCAP_GUE)
		return transmit_as(ctx, d, verdict, ip, 1, bpf_htons(GUE_SPORT(flow_hash_of(f))), bpf_htons(vip->gue_port));
	return transmit_as(ctx, d, verdict, ip, 0, 0, 0);
}

/* A decision d (verdict) taken for the IPv4 packet at the VIP's version:
 * dropped, or sent (mux_fast.h comes here too, for a moved bucket). */
INLINE int forward4_decided(struct xdp_md *ctx, const struct vip_info *vip, const struct flow *f, struct decision *d,
			    int verdict, struct iphdr *ip, int icmp, __u64 version)
{
	if (!d->forward)
		return drop(vip->stats, verdict);
	if (icmp)
		d->also = MUX_FWD_ICMP_FRAG_NEEDED;

	d->encap.opt.generation = bpf_htonl((__u32)version);
	d->encap.opt.incarnation = bpf_htonl((__u32)(version >> 32));
	return transmit(ctx, vip, f, d, verdict, ip);
}

#endif
