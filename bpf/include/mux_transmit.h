/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * How an encapsulated packet leaves the mux, for both families (mux.c's
 * transmit_as for IPv4, mux6.h's transmit6 for IPv6; gue and is_ipv6 are
 * constants at each call): the next hop's failure as its drop reason, and
 * once the packet is encapsulated, its MACs, its counts and its way out.
 */
#ifndef BEAMER_MUX_TRANSMIT_H
#define BEAMER_MUX_TRANSMIT_H

#include "defs.h"
#include "nexthop.h"
#include "mux_maps.h"
#include "vip_traffic.h"
#include "capture.h"

/* The drop reason of a next-hop lookup that found no way, else 0. */
INLINE int nexthop_drop(enum nexthop_result r)
{
	switch (r) {
	case NEXTHOP_TX:
	case NEXTHOP_REDIRECT:
		return 0;
	case NEXTHOP_NO_NEIGH:
		return MUX_DROP_NO_NEIGH;
	default:
		return MUX_DROP_NO_ROUTE;
	}
}

/* eth is the encapsulated frame's Ethernet header, nh the next hop. Every
 * forwarded packet is counted here exactly once: the verdict, what also
 * applies, the encapsulation and family, and the VIP's and server's
 * traffic. The IPv6 path has no mux-tx capture point (capture.h). */
INLINE int transmit_out(struct xdp_md *ctx, struct ethhdr *eth, const struct nexthop_answer *nh, int verdict, int also,
			__u16 vip_stat, __u16 stat, __u32 inner_tot, __u8 new_flow, const int gue, const int is_ipv6)
{
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);

	if (gue)
		mux_count(MUX_FWD_GUE);
	if (is_ipv6)
		mux_count(MUX_FWD_IPV6);
	mux_count(verdict);
	if (also)
		mux_count(also);
	vip_traffic_forward(vip_stat, stat, inner_tot, new_flow);
	if (!is_ipv6)
		capture_xdp(ctx, CAPTURE_MUX_TX);
	if (nh->ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(nh->ifindex, 0);
}

#endif
