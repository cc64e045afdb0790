/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The next hop towards an IPv6 server, from XDP: bpf_fib_lookup with
 * AF_INET6, cached per CPU like the IPv4 answers (nexthop.h, same epoch),
 * in a cache of its own so that IPv4 entries stay as small as they are.
 */
#ifndef BEAMER_NEXTHOP6_H
#define BEAMER_NEXTHOP6_H

#include "defs.h"
#include "limits.h"
#include "nexthop.h"
#include "flow6.h"

#ifndef AF_INET6
#define AF_INET6 10
#endif

struct nexthop6 {
	struct in6_addr daddr; /* server address this slot answers for */
	__u32 ifindex;
	__u32 mtu;
	__u64 epoch;
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NEXTHOP6_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct nexthop6);
} nexthop6_cache SEC(".maps");

/* Only global unicast and unique-local servers: never the unspecified,
 * loopback, link-local (it needs a device, the FIB cannot choose one) or
 * multicast address a hand-written store could name. */
INLINE int addr6_routable(const struct in6_addr *a)
{
	__u32 w0 = bpf_ntohl(a->in6_u.u6_addr32[0]);

	if ((w0 >> 24) == 0xff || (w0 >> 22) == (0xfe80 >> 6))
		return 0;
	if (w0 == 0 && a->in6_u.u6_addr32[1] == 0 && a->in6_u.u6_addr32[2] == 0 &&
	    (a->in6_u.u6_addr32[3] == 0 || a->in6_u.u6_addr32[3] == bpf_htonl(1)))
		return 0;
	return 1;
}

/* The route to the IPv6 address daddr from saddr: egress device, MACs
 * and the path MTU (asked with tot_len 0, as nexthop.h explains). */
INLINE enum nexthop_result xdp_nexthop6(struct xdp_md *ctx, const struct in6_addr *saddr, const struct in6_addr *daddr,
					 struct nexthop_answer *out)
{
	__u32 slot = (bpf_ntohl(addr6_fold(daddr)) * 2654435761u) >> (32 - 10);
	__u32 zero = 0;
	struct nexthop6 *nh = bpf_map_lookup_elem(&nexthop6_cache, &slot);
	__u64 *epoch = bpf_map_lookup_elem(&nexthop_epoch, &zero);
	__u64 now = epoch ? READ_ONCE_U64(epoch) : 0;

	if (nh && now && nh->epoch == now && addr6_eq(&nh->daddr, daddr)) {
		__builtin_memcpy(out->dmac, nh->dmac, ETH_ALEN);
		__builtin_memcpy(out->smac, nh->smac, ETH_ALEN);
		out->ifindex = nh->ifindex;
		out->mtu = nh->mtu;
		return nh->ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
	}
	if (!addr6_routable(daddr))
		return NEXTHOP_NO_ROUTE;

	struct bpf_fib_lookup fib = {};
	fib.family = AF_INET6;
	fib.l4_protocol = IPPROTO_UDP;
	fib.tot_len = 0;
	__builtin_memcpy(fib.ipv6_src, saddr, 16);
	__builtin_memcpy(fib.ipv6_dst, daddr, 16);
	fib.ifindex = ctx->ingress_ifindex;

	int rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return NEXTHOP_NO_NEIGH;
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return NEXTHOP_NO_ROUTE;
	__builtin_memcpy(out->dmac, fib.dmac, ETH_ALEN);
	__builtin_memcpy(out->smac, fib.smac, ETH_ALEN);
	out->ifindex = fib.ifindex;
	out->mtu = fib.mtu_result;
	if (nh) {
		__builtin_memcpy(&nh->daddr, daddr, 16);
		nh->ifindex = fib.ifindex;
		nh->epoch = now;
		nh->mtu = fib.mtu_result;
		__builtin_memcpy(nh->dmac, fib.dmac, ETH_ALEN);
		__builtin_memcpy(nh->smac, fib.smac, ETH_ALEN);
	}
	return fib.ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
}

#endif
