/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The flow of an IPv6 packet, in the same struct flow every strategy reads
 * (flow.h): each 128-bit address is folded to 32 bits (the XOR of its four
 * words) and the flow hash is then the IPv4 one, unchanged (flow_hash.h;
 * pkg/wire FlowHash6 is the Go twin). Folding keeps struct flow, the
 * strategies and the IPv4 path exactly as they are; the hash still mixes
 * every address bit, and the 5-tuple's ports spread one client's
 * connections as for IPv4. Whoever needs the full addresses (the agent's
 * socket lookup, the mux's outer header) reads them from the IPv6 header.
 */
#ifndef BEAMER_FLOW6_H
#define BEAMER_FLOW6_H

#include "defs.h"
#include "flow.h"
#include "parse6.h"

/* XOR of the four words: byte order commutes with XOR, so the fold of the
 * network-order words is the network-order fold of the host-order ones. */
INLINE __be32 addr6_fold(const struct in6_addr *a)
{
	return a->in6_u.u6_addr32[0] ^ a->in6_u.u6_addr32[1] ^ a->in6_u.u6_addr32[2] ^ a->in6_u.u6_addr32[3];
}

INLINE int addr6_eq(const struct in6_addr *a, const struct in6_addr *b)
{
	return ((a->in6_u.u6_addr32[0] ^ b->in6_u.u6_addr32[0]) | (a->in6_u.u6_addr32[1] ^ b->in6_u.u6_addr32[1]) |
		(a->in6_u.u6_addr32[2] ^ b->in6_u.u6_addr32[2]) | (a->in6_u.u6_addr32[3] ^ b->in6_u.u6_addr32[3])) == 0;
}

/* Fills f from the IPv6 packet ip6 (avail bytes from ip6 on, some maybe
 * beyond data_end in tc): extension headers walked as parse6.h says, then
 * the TCP or UDP header checked against the payload length (parse_l4,
 * flow.h), the addresses folded. *tcpp is the
 * TCP header (NULL for UDP). ICMPv6 returns PARSE_ICMP6 with only
 * f->l4_off set (the ICMPv6 header's offset). */
INLINE int parse_flow6(struct ipv6hdr *ip6, void *data_end, __u32 avail, struct flow *f, struct tcphdr **tcpp)
{
	__u8 proto = 0;
	__u32 off = 0;
	int pv = ipv6_walk(ip6, data_end, avail, &proto, &off);

	f->l4_off = off; /* for ICMPv6: where its header is */
	if (pv != PARSE_OK)
		return pv;
	__u32 end = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
	off &= 0x1ff; /* at most 40 + IPV6_MAX_EXT_BYTES: tells the verifier */
	pv = parse_l4(ip6, off, end, proto, data_end, f, tcpp);
	if (pv != PARSE_OK)
		return pv;
	f->saddr = addr6_fold(&ip6->saddr);
	f->daddr = addr6_fold(&ip6->daddr);
	return PARSE_OK;
}

#endif
