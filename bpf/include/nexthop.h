/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sending an encapsulated packet on its way from XDP: the kernel's FIB gives
 * the egress device and the next hop's MAC (from the real neighbour table,
 * which the mux daemon keeps resolved with managed neighbour entries). The
 * packet leaves by XDP_TX when the egress device is the one it came in on,
 * else by redirect.
 *
 * A FIB lookup costs about as much as the rest of the mux together, so its
 * answer is cached per CPU, direct-mapped by server address. An entry holds
 * while the epoch it was filled in is current; the loader bumps the epoch
 * every second (and on demand), so a route or neighbour change reaches the
 * data path within a second — without a clock read per packet.
 *
 * The answer includes the egress MTU (the route's, else the device's), so
 * the mux decides about a packet too big to encapsulate from the same
 * number whether the answer came from the cache or from the FIB.
 */
#ifndef BEAMER_NEXTHOP_H
#define BEAMER_NEXTHOP_H

#include "defs.h"
#include "limits.h"

#ifndef AF_INET
#define AF_INET 2
#endif

enum nexthop_result {
	NEXTHOP_TX = 0,
	NEXTHOP_REDIRECT,
	NEXTHOP_NO_ROUTE,
	NEXTHOP_NO_NEIGH,
};

struct nexthop {
	__be32 daddr;    /* server address this slot answers for */
	__u32 ifindex;   /* egress device */
	__u64 epoch;     /* nexthop_epoch when filled */
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
	__u32 mtu;       /* egress MTU: largest outer packet the path takes */
};

/* What a lookup found: where to send and how large a packet may be. */
struct nexthop_answer {
	__u32 ifindex;
	__u32 mtu;
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NEXTHOP_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct nexthop);
} nexthop_cache SEC(".maps");

/* Word 0: the current epoch of the cache. Written by the loader (mmap). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} nexthop_epoch SEC(".maps");

/* Looks up the route to daddr: egress device, MACs and MTU. The FIB is
 * asked with tot_len 0 so that it never refuses for size: on success the
 * kernel (5.13+) returns the path MTU in mtu_result, and the caller compares
 * the packet with it — the same check for cached and fresh answers. */
INLINE enum nexthop_result xdp_nexthop(struct xdp_md *ctx, __be32 saddr, __be32 daddr, struct nexthop_answer *out)
{
	__u32 slot = (bpf_ntohl(daddr) * 2654435761u) >> (32 - 12);
	__u32 zero = 0;
	struct nexthop *nh = bpf_map_lookup_elem(&nexthop_cache, &slot);
	__u64 *epoch = bpf_map_lookup_elem(&nexthop_epoch, &zero);
	__u64 now = epoch ? READ_ONCE_U64(epoch) : 0;

	if (nh && nh->daddr == daddr && nh->epoch == now && now) {
		__builtin_memcpy(out->dmac, nh->dmac, ETH_ALEN);
		__builtin_memcpy(out->smac, nh->smac, ETH_ALEN);
		out->ifindex = nh->ifindex;
		out->mtu = nh->mtu;
		return nh->ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
	}

	/* Never send to an address that is not unicast (0/8's 0.0.0.0,
	 * 127/8, 224/4 multicast, 240/4 with the broadcast address): a store
	 * written by hand can name one, and the FIB would route it by the
	 * default route. Checked on a miss only: the cache holds unicast
	 * addresses alone. */
	__u32 host = bpf_ntohl(daddr);
	if (host == 0 || (host >> 24) == 127 || (host >> 28) >= 0xe)
		return NEXTHOP_NO_ROUTE;

	struct bpf_fib_lookup fib = {};
	fib.family = AF_INET;
	fib.l4_protocol = IPPROTO_IPIP;
	fib.tot_len = 0;
	fib.ipv4_src = saddr;
	fib.ipv4_dst = daddr;
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
		nh->daddr = daddr;
		nh->ifindex = fib.ifindex;
		nh->epoch = now;
		nh->mtu = fib.mtu_result;
		__builtin_memcpy(nh->dmac, fib.dmac, ETH_ALEN);
		__builtin_memcpy(nh->smac, fib.smac, ETH_ALEN);
	}
	return fib.ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
}

#endif
