/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sending an encapsulated packet on its way from XDP, for both families:
 * the kernel's FIB gives
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
 *
 * Before either, an IPv4 server's next hop is read from the table the
 * daemon publishes (nexthop_table below: pkg/dataplane nexthop_table.go,
 * kept by pkg/node/muxd nexthops.go from routes and neighbours): one
 * inlined array read, no epoch, no helper. An entry the daemon has not
 * resolved (no route yet, a neighbour not yet known, a slot taken by
 * another server) or is rewriting falls through to the cache and the FIB,
 * so nothing forwards worse than without the table. IPv6 servers have a
 * table of their own (nexthop6_table).
 */
#ifndef BEAMER_NEXTHOP_H
#define BEAMER_NEXTHOP_H

#include "defs.h"
#include "limits.h"
#include "flow.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
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

/* The IPv6 answers: the same fields after a 16-byte address. */
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

/* Word 0: the current epoch of both caches. Written by the loader (mmap). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} nexthop_epoch SEC(".maps");

/* Only global unicast and unique-local IPv6 servers: never the unspecified,
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

/* Never send to an IPv4 address that is not unicast (0/8's 0.0.0.0, 127/8,
 * 224/4 multicast, 240/4 with the broadcast address): a store written by
 * hand can name one, and the FIB would route it by the default route. */
INLINE int addr4_routable(__be32 a)
{
	__u32 host = bpf_ntohl(a);

	return !(host == 0 || (host >> 24) == 127 || (host >> 28) >= 0xe);
}

/* A cache entry's answer (either family's entry: the fields are named alike). */
#define NEXTHOP_ANSWER(out, nh)                                      \
	do {                                                         \
		__builtin_memcpy((out)->dmac, (nh)->dmac, ETH_ALEN); \
		__builtin_memcpy((out)->smac, (nh)->smac, ETH_ALEN); \
		(out)->ifindex = (nh)->ifindex;                      \
		(out)->mtu = (nh)->mtu;                              \
	} while (0)

/* The FIB's answer remembered in a cache entry of either family. */
#define NEXTHOP_REMEMBER(nh, fib, now)                              \
	do {                                                        \
		(nh)->ifindex = (fib)->ifindex;                     \
		(nh)->epoch = (now);                                \
		(nh)->mtu = (fib)->mtu_result;                      \
		__builtin_memcpy((nh)->dmac, (fib)->dmac, ETH_ALEN); \
		__builtin_memcpy((nh)->smac, (fib)->smac, ETH_ALEN); \
	} while (0)

/*
 * The published next hops: NEXTHOP_TABLE_LINES lines of two entries,
 * a server's line chosen by the same hash as the cache slot, either entry
 * of the line its own (the daemon fills the first free one; a server
 * finding both taken is left to the cache). Written by the daemon through
 * a shared mapping with single atomic 64-bit stores, read here whole or
 * not at all, like a sequence lock: the first word is seq (low 32 bits)
 * and daddr (high 32). seq is odd while the entry is whole and valid; the
 * daemon makes it even (the entry invalid) before it writes any other
 * word, and odd again, one higher, after the last. A packet reads the
 * first word, the answer, then the first word again, and uses the answer
 * only if both reads are the same odd word naming its server: it was not
 * written in between. The loads stay in program order (barrier(); loads
 * are not reordered with loads on the CPUs we run on, as mux.c's
 * generation read assumes), and seq only grows, so an old odd word never
 * returns.
 */
#define NEXTHOP_TABLE_BITS 13
#define NEXTHOP_TABLE_LINES (1 << NEXTHOP_TABLE_BITS) /* 16384 servers */

struct nexthop_entry {
	__u32 seq;     /* odd: whole and valid; even: invalid or being written */
	__be32 daddr;  /* the server it answers for */
	__u32 ifindex; /* egress device */
	__u32 mtu;     /* egress MTU, as the FIB gives it */
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
	__u32 pad;
};

struct nexthop_line {
	struct nexthop_entry e[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NEXTHOP_TABLE_LINES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct nexthop_line);
} nexthop_table SEC(".maps");

/* The line of an IPv4 server in nexthop_table (Go: nextHopLine). */
INLINE __u32 nexthop_line_of(__be32 daddr)
{
	return addr_line(daddr, NEXTHOP_TABLE_BITS);
}

/* The daemon's answer for daddr into out: 1, or 0 when it has none whole. */
INLINE int nexthop_published(__be32 daddr, struct nexthop_answer *out)
{
	__u32 line = nexthop_line_of(daddr);
	struct nexthop_line *l = bpf_map_lookup_elem(&nexthop_table, &line);

	if (!l)
		return 0;
	struct nexthop_entry *e = &l->e[0];
	__u64 head = READ_ONCE_U64(e);
	if ((__be32)(head >> 32) != daddr) {
		e = &l->e[1];
		head = READ_ONCE_U64(e);
		if ((__be32)(head >> 32) != daddr)
			return 0;
	}
	if (!(head & 1))
		return 0;
	barrier();
	NEXTHOP_ANSWER(out, e);
	barrier();
	return READ_ONCE_U64(e) == head;
}

/*
 * The IPv6 servers' published next hops: one 64-byte entry a line, the
 * line chosen like the IPv6 cache slot, the same sequence lock with a
 * 64-bit seq word of its own (the address does not fit beside it), read
 * before and after the address and the answer; a server whose line is
 * another's is left to the cache.
 */
#define NEXTHOP6_TABLE_BITS 12
#define NEXTHOP6_TABLE_LINES (1 << NEXTHOP6_TABLE_BITS) /* 4096 servers */

struct nexthop6_entry {
	__u64 seq;             /* odd: whole and valid; even: invalid or being written */
	struct in6_addr daddr; /* the server it answers for */
	__u32 ifindex;
	__u32 mtu;
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
	__u8 pad[20];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NEXTHOP6_TABLE_LINES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct nexthop6_entry);
} nexthop6_table SEC(".maps");

/* The line of an IPv6 server in nexthop6_table (Go: nextHopLine6). */
INLINE __u32 nexthop6_line_of(const struct in6_addr *daddr)
{
	return addr_line(addr6_fold(daddr), NEXTHOP6_TABLE_BITS);
}

/* nexthop_published for an IPv6 server. */
INLINE int nexthop6_published(const struct in6_addr *daddr, struct nexthop_answer *out)
{
	__u32 line = nexthop6_line_of(daddr);
	struct nexthop6_entry *e = bpf_map_lookup_elem(&nexthop6_table, &line);

	if (!e)
		return 0;
	__u64 head = READ_ONCE_U64(&e->seq);
	if (!(head & 1))
		return 0;
	barrier();
	if (!addr6_eq(&e->daddr, daddr))
		return 0;
	NEXTHOP_ANSWER(out, e);
	barrier();
	return READ_ONCE_U64(&e->seq) == head;
}

/* Looks up the route to daddr from saddr: egress device, MACs and MTU.
 * One path for both families: an IPv4 address is word 0 of saddr and
 * daddr, an IPv6 one all four; is_ipv6 is a constant at each call, so each
 * family is compiled as if the other did not exist. IPv6 answers have a
 * cache of their own so that IPv4 entries stay as small as they are. The
 * FIB is asked with tot_len 0 so that it never refuses for size: on
 * success the kernel (5.13+) returns the path MTU in mtu_result, and the
 * caller compares the packet with it — the same check for cached and
 * fresh answers. */
INLINE enum nexthop_result xdp_nexthop(struct xdp_md *ctx, const __be32 *saddr, const __be32 *daddr, const int is_ipv6,
				       struct nexthop_answer *out)
{
	const struct in6_addr *daddr6 = (const struct in6_addr *)daddr;
	/* IPv4: both addresses read once, before any helper call. */
	const __be32 saddr4 = is_ipv6 ? 0 : saddr[0], daddr4 = is_ipv6 ? 0 : daddr[0];
	struct nexthop *nh = NULL;
	struct nexthop6 *nh6 = NULL;
	__u32 zero = 0;

	if (is_ipv6 ? nexthop6_published(daddr6, out) : nexthop_published(daddr4, out))
		return out->ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;

	if (is_ipv6) {
		__u32 slot = addr_line(addr6_fold(daddr6), 10);
		nh6 = bpf_map_lookup_elem(&nexthop6_cache, &slot);
	} else {
		__u32 slot = addr_line(daddr4, 12);
		nh = bpf_map_lookup_elem(&nexthop_cache, &slot);
	}
	__u64 *epoch = bpf_map_lookup_elem(&nexthop_epoch, &zero);
	__u64 now = epoch ? READ_ONCE_U64(epoch) : 0;

	if (is_ipv6 && nh6 && now && nh6->epoch == now && addr6_eq(&nh6->daddr, daddr6)) {
		NEXTHOP_ANSWER(out, nh6);
		return nh6->ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
	}
	if (!is_ipv6 && nh && nh->daddr == daddr4 && nh->epoch == now && now) {
		NEXTHOP_ANSWER(out, nh);
		return nh->ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
	}
	/* Checked on a miss only: the caches hold routable addresses alone. */
	if (is_ipv6 ? !addr6_routable(daddr6) : !addr4_routable(daddr4))
		return NEXTHOP_NO_ROUTE;

	struct bpf_fib_lookup fib = {};
	if (is_ipv6) {
		fib.family = AF_INET6;
		fib.l4_protocol = IPPROTO_UDP;
		__builtin_memcpy(fib.ipv6_src, saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, daddr, 16);
	} else {
		fib.family = AF_INET;
		fib.l4_protocol = IPPROTO_IPIP;
		fib.ipv4_src = saddr4;
		fib.ipv4_dst = daddr4;
	}
	fib.tot_len = 0;
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
	if (is_ipv6 && nh6) {
		__builtin_memcpy(&nh6->daddr, daddr, 16);
		NEXTHOP_REMEMBER(nh6, &fib, now);
	}
	if (!is_ipv6 && nh) {
		nh->daddr = daddr4;
		NEXTHOP_REMEMBER(nh, &fib, now);
	}
	return fib.ifindex == ctx->ingress_ifindex ? NEXTHOP_TX : NEXTHOP_REDIRECT;
}

#endif
