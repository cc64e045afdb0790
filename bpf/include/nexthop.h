/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sending an encapsulated packet on its way from XDP: the kernel's FIB gives
 * the egress device and the next hop's MAC (from the real neighbour table,
 * which the mux daemon keeps resolved with managed neighbour entries). The
 * packet leaves by XDP_TX when the egress device is the one it came in on,
 * else by redirect.
 */
#ifndef BEAMER_NEXTHOP_H
#define BEAMER_NEXTHOP_H

#include "defs.h"

#ifndef AF_INET
#define AF_INET 2
#endif

enum nexthop_result {
	NEXTHOP_TX = 0,
	NEXTHOP_REDIRECT,
	NEXTHOP_NO_ROUTE,
	NEXTHOP_NO_NEIGH,
};

/* Looks up the route to daddr and writes the MACs into eth; sets *ifindex to
 * the egress device. */
INLINE enum nexthop_result xdp_nexthop(struct xdp_md *ctx, struct ethhdr *eth, __be32 saddr, __be32 daddr,
				       __u16 tot_len, __u32 *ifindex)
{
	struct bpf_fib_lookup fib = {};

	fib.family = AF_INET;
	fib.l4_protocol = IPPROTO_IPIP;
	fib.tot_len = tot_len;
	fib.ipv4_src = saddr;
	fib.ipv4_dst = daddr;
	fib.ifindex = ctx->ingress_ifindex;

	int rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return NEXTHOP_NO_NEIGH;
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return NEXTHOP_NO_ROUTE;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	*ifindex = fib.ifindex;
	return fib.ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
}

#endif
