/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The server agent's maps (pkg/dataplane drives them from the agent config).
 *
 *   agent_vips       VIP -> struct agent_vip: the instance's bucket count B
 *                    (to find the bucket of a packet, as the mux did), its
 *                    chaining window, and where its per-bucket state lives.
 *   trusted_sources  LPM trie of prefixes (muxes, fellow servers) whose
 *                    encapsulated packets are accepted.
 *   bucket_changed   per bucket: the latest "changed" time seen (Beamer §4.2:
 *                    the chaining window runs from the highest timestamp),
 *                    never beyond the agent's clock plus the allowed skew.
 *   generation_seen  per VIP slot, one value of two words: the newest
 *                    (incarnation << 32 | generation) seen in the current
 *                    and in the previous period of the daemon's rotation;
 *                    the newest remembered is the larger of the two (see
 *                    agent.c, "Sanity bounds"). Both words in one value, so
 *                    a packet reads them through one lookup (issue 27; until
 *                    then one word per element, slot * 2 and slot * 2 + 1:
 *                    the same memory, pkg/dataplane migrates such a pinned
 *                    map).
 *   agent_clock      word 0: Unix time minus boot time, in ns, kept current
 *                    by the daemon (the option's times are Unix seconds);
 *                    word 1: which generation_seen word is current (0/1).
 */
#ifndef BEAMER_AGENT_MAPS_H
#define BEAMER_AGENT_MAPS_H

#include "defs.h"
#include "limits.h"
#include "counters.h"

struct agent_vip {
	__u32 buckets;      /* B of the VIP's instance */
	__u32 bucket_base;  /* first index of the VIP's buckets in bucket_changed */
	__u32 slot;         /* index in generation_seen */
	__u32 window;       /* chaining window in seconds; 0 = no daisy chaining */
};

struct lpm_v4_key {
	__u32 prefixlen;
	__be32 addr;
};

enum agent_counter {
	AGENT_PASS_NOT_ENCAP = 0,   /* neither IP-in-IP nor GUE to one of our ports: ordinary traffic */
	AGENT_PASS_NOT_FOR_US,      /* IP-in-IP to another address */
	AGENT_LOCAL_SYN,            /* connection request: kept */
	AGENT_TO_STACK,             /* newest generation, nothing to chain: kept (the stack
	                             * serves the connection, or resets it) — no lookup */
	AGENT_LOCAL_SOCKET,         /* chainable or stale, but a local connection's: kept */
	AGENT_LOCAL_COOKIE,         /* chainable or stale, but a valid SYN-cookie ACK: kept */
	AGENT_STACK_NO_OPTION,      /* no option (subflow by server id): kept, stack answers */
	AGENT_CHAINED,              /* daisy-chained to a previous owner of the bucket */
	AGENT_DROP_STALE_GENERATION,/* from a mux behind the newest generation: dropped */
	AGENT_DROP_UNTRUSTED,       /* outer source not a trusted prefix */
	AGENT_DROP_TRUNCATED,
	AGENT_DROP_BAD_HEADER,
	AGENT_DROP_BAD_OPTION,      /* outer options that are not exactly one valid Beamer option */
	AGENT_DROP_FRAGMENT,
	AGENT_DROP_NOT_TCP,
	AGENT_DROP_INNER_OPTIONS,   /* inner IPv4 options (the mux never sends them) */
	AGENT_DROP_UNKNOWN_VIP,
	AGENT_DROP_DECAP,           /* the kernel refused to strip the outer header */
	AGENT_DROP_CHAIN_NO_ROUTE,  /* no route to the previous server */
	AGENT_DROP_CHAIN_FAILED,    /* could not rewrite the packet */
	AGENT_NEW_INCARNATION,      /* of the above: the option raised the incarnation (a reset) */
	AGENT_FUTURE_INCARNATION,   /* of the above: incarnation ahead of clock + skew, not remembered */
	AGENT_SUSPICIOUS_GENERATION,/* of the above: generation jump too large, not remembered */
	AGENT_CLAMPED_CHANGE,       /* of the above: change time ahead of clock + skew, clamped */
	AGENT_XDP_DECAP,            /* of the above: kept by the XDP fast path (agent.c beamer_agent_xdp) */
	AGENT_ICMP_FRAG_NEEDED,     /* of the above: an ICMP frag needed, decided as the connection it quotes */
	AGENT_DROP_ICMP,            /* inner ICMP other than a frag needed quoting a VIP's TCP/UDP packet */
	AGENT_GUE,                  /* of the above: arrived in GUE (bpf/include/gue_agent.h) */
	AGENT_IPV6,                 /* of the above: kept or chained over IPv6 (bpf/include/agent6.h) */
	AGENT_DROP_EXT_HEADERS,     /* inner IPv6 extension headers beyond the bound (parse.h) */
	AGENT_DROP_BAD_CHECKSUM,    /* outer IPv4 header checksum wrong (issue 23) */
	AGENT_DROP_BAD_UDP_CHECKSUM,/* GUE whose nonzero UDP checksum is wrong (or too long to verify) */
	AGENT_DROP_UNTRUSTED_OWNER, /* chainable, but to a previous owner outside the trusted prefixes */
	AGENT_COUNTER_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENT_MAX_VIPS);
	__type(key, __be32);
	__type(value, struct agent_vip);
} agent_vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, AGENT_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v4_key);
	__type(value, __u8);
} trusted_sources SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized at load to the sum of the VIPs' B */
	__type(key, __u32);
	__type(value, __u32);
} bucket_changed SEC(".maps");

/* Each word is read and written whole (one aligned 64-bit access, by the
 * daemon too: pkg/dataplane wordArray), never torn; the two are read one
 * after the other, as when they were two elements. */
struct generation_words {
	__u64 word[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AGENT_MAX_VIPS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct generation_words);
} generation_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} agent_clock SEC(".maps");

DECLARE_COUNTERS(agent_counters, AGENT_COUNTER_MAX);

/*
 * The fast path's two lookups by address (issue 27), as load-time
 * constants: both sets are written once, when the program is loaded
 * (pkg/dataplane configure), and a server trusts a few prefixes and serves
 * a few VIPs. So when there are at most AGENT_FAST_SET of each, the
 * loader also sets them here, and a packet's source and VIP are compared
 * with constants the verifier knows (a few instructions), instead of a
 * walk of the LPM trie and a hash lookup (helper calls). More than that:
 * the count says so, and the maps decide. The maps hold every entry in
 * both cases (inspection and the IPv6 path read them).
 */
#define AGENT_FAST_SET 8
volatile const __u32 trusted4_count = AGENT_FAST_SET + 1; /* > AGENT_FAST_SET: the trie decides */
volatile const __be32 trusted4_net[AGENT_FAST_SET] = {};
volatile const __be32 trusted4_mask[AGENT_FAST_SET] = {};
volatile const __u32 vips4_count = AGENT_FAST_SET + 1; /* > AGENT_FAST_SET: the hash map decides */
volatile const __be32 vips4_addr[AGENT_FAST_SET] = {};
volatile const struct agent_vip vips4_rec[AGENT_FAST_SET] = {};

/* Is addr inside a trusted IPv4 prefix? */
INLINE int ipv4_trusted(__be32 addr)
{
	__u32 count = trusted4_count; /* read once: volatile, it would be read in each round */

	if (count > AGENT_FAST_SET) {
		struct lpm_v4_key k = {.prefixlen = 32, .addr = addr};
		return bpf_map_lookup_elem(&trusted_sources, &k) != NULL;
	}
#pragma unroll
	for (int i = 0; i < AGENT_FAST_SET; i++)
		if (i < count && (addr & trusted4_mask[i]) == trusted4_net[i])
			return 1;
	return 0;
}

/* The record of an IPv4 VIP this server serves (NULL: not one). */
INLINE const struct agent_vip *agent_vip_of(__be32 vip)
{
	__u32 count = vips4_count; /* read once, as in ipv4_trusted */

	if (count > AGENT_FAST_SET)
		return bpf_map_lookup_elem(&agent_vips, &vip);
#pragma unroll
	for (int i = 0; i < AGENT_FAST_SET; i++)
		if (i < count && vip == vips4_addr[i])
			return (const struct agent_vip *)&vips4_rec[i];
	return NULL;
}

INLINE void agent_count(enum agent_counter c)
{
	count_in(&agent_counters, AGENT_COUNTER_MAX, c);
}

/* Raises *p to v if v is higher; returns the value now held. Lock-free: a
 * compare-and-swap loop, bounded because each failed round means another CPU
 * raised the value. */
INLINE __u32 atomic_max_u32(__u32 *p, __u32 v)
{
	__u32 cur = *(volatile __u32 *)p;

	for (int i = 0; i < 4 && v > cur; i++) {
		__u32 seen = __sync_val_compare_and_swap(p, cur, v);
		if (seen == cur)
			return v;
		cur = seen;
	}
	return cur > v ? cur : v;
}

/* The 64-bit version of atomic_max_u32. */
INLINE __u64 atomic_max_u64(__u64 *p, __u64 v)
{
	__u64 cur = *(volatile __u64 *)p;

	for (int i = 0; i < 4 && v > cur; i++) {
		__u64 seen = __sync_val_compare_and_swap(p, cur, v);
		if (seen == cur)
			return v;
		cur = seen;
	}
	return cur > v ? cur : v;
}

#endif
