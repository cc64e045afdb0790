/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the agent's IPv6 path (issue 16) has of its own: GUE over an IPv6
 * outer header (gue.h, private data struct beamer_opt6 with 16-byte
 * previous owners) carrying an IPv6 packet to one of this server's IPv6
 * VIPs. The decision is the IPv4 path's, one body for both families and
 * both hooks (agent.c agent_path); here are the IPv6 VIPs and trusted
 * prefixes, the server's own IPv6 address, the socket lookup with an IPv6
 * tuple and the chaining in GUE over IPv6.
 */
#ifndef BEAMER_AGENT6_H
#define BEAMER_AGENT6_H

#include <linux/ipv6.h>
#include "defs.h"
#include "flow.h"
#include "gue.h"
#include "agent_maps.h"
#include "agent_config.h"
#include "agent_verdict.h"
#include "agent_locality.h"
#include "agent_send.h"

struct lpm_v6_key {
	__u32 prefixlen;
	__be32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENT_MAX_VIPS);
	__type(key, struct in6_addr);
	__type(value, struct agent_vip);
} agent_vips6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, AGENT_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v6_key);
	__type(value, __u8);
} trusted_sources6 SEC(".maps");

INLINE int is_local6(const __be32 *a)
{
	return a[0] == local_addr6[0] && a[1] == local_addr6[1] && a[2] == local_addr6[2] && a[3] == local_addr6[3];
}

/* Is the IPv6 address a (16 bytes, network order) inside the trusted
 * prefixes? */
INLINE int ipv6_trusted(const __be32 *a)
{
	struct lpm_v6_key key = {.prefixlen = 128};

	__builtin_memcpy(key.addr, a, 16);
	return bpf_map_lookup_elem(&trusted_sources6, &key) != NULL;
}

/* Does the inner IPv6 packet belong to this server (agent_locality.h sock_locality
 * with an IPv6 tuple)? client and vip are the connection's addresses: the
 * packet's, or for a Packet Too Big those of the reply it quotes. */
INLINE enum locality locality6(struct __sk_buff *skb, struct ipv6hdr *ip6, const struct in6_addr *client,
				const struct in6_addr *vip, const struct flow *f, struct tcphdr *tcp)
{
	struct bpf_sock_tuple tuple = {};

	__builtin_memcpy(tuple.ipv6.saddr, client, 16);
	__builtin_memcpy(tuple.ipv6.daddr, vip, 16);
	tuple.ipv6.sport = f->sport;
	tuple.ipv6.dport = f->dport;
	return sock_locality(skb, &tuple, sizeof(tuple.ipv6), ip6, sizeof(*ip6), f, tcp);
}

/* Chains the packet to prev[next] in GUE over IPv6, when the relay rule
 * (agent.c owner_trusted) allows: outer source us,
 * destination the previous owner, hop limit reset, hop = next + 1; the UDP
 * source port (the flow's entropy) stays, the UDP checksum becomes 0
 * (a nonzero one was verified, but no longer covers what changed). */
INLINE int chain6(struct __sk_buff *skb, void *outer, int next)
{
	/* What changes: the IPv6 header, and the private data's first word
	 * (hop); UDP and GUE are copied back as they were. */
	struct {
		struct ipv6hdr ip;
		struct udphdr udp;
		struct guehdr g;
		__u8 type, len, hop, flags;
	} hdr;
	void *data_end = (void *)(long)skb->data_end;

	_Static_assert(sizeof(hdr) == GUE6_LEN_PLAIN + 4, "IPv6 GUE headers are laid out without padding");
	if (next < 0 || next >= BEAMER_MAX_CHAIN || outer + GUE6_LEN_WITH(next + 1) > data_end)
		return drop(AGENT_DROP_CHAIN_FAILED);
	if (!ipv6_trusted(outer + GUE6_LEN_OPT + 16 * (next & 7)))
		return drop(AGENT_DROP_UNTRUSTED_OWNER);
	__builtin_memcpy(&hdr, outer, sizeof(hdr));
#pragma unroll
	for (int i = 0; i < 4; i++)
		hdr.ip.saddr.in6_u.u6_addr32[i] = local_addr6[i];
	__builtin_memcpy(&hdr.ip.daddr, outer + GUE6_LEN_OPT + 16 * (next & 7), 16);
	hdr.ip.hop_limit = BEAMER_OUTER_TTL;
	hdr.hop = next + 1;
	hdr.udp.check = 0; /* as the mux sends it: the addresses and hop changed (RFC 6935) */

	/* The IPv6 header, UDP, GUE and the private data's first word (hop). */
	return chain_send(skb, &hdr, sizeof(hdr), IPPROTO_UDP, bpf_ntohs(hdr.ip.payload_len) + sizeof(hdr.ip),
			  hdr.ip.saddr.in6_u.u6_addr32, hdr.ip.daddr.in6_u.u6_addr32, 1);
}

#endif
