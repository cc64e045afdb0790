/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Header parsing shared by the mux (XDP) and the agent (tc, XDP), for both
 * families: one path, with is_ipv6 a constant at each call so that each
 * family is compiled as if the other did not exist. Every function checks
 * bounds against data_end before it reads, and says why it refused a
 * packet so the caller can count the reason.
 *
 * IPv4: a 20-byte header (options refused), no fragment, the total length
 * within the packet.
 *
 * IPv6, with a bounded treatment of extension headers (docs/wire-format.md,
 * "IPv6"):
 *
 *   - hop-by-hop options (0), routing (43), destination options (60) and
 *     fragment (44) headers are walked, at most IPV6_MAX_EXT of them and at
 *     most IPV6_MAX_EXT_BYTES bytes together; a longer chain is refused
 *     (PARSE_EXT_CHAIN, a counted drop). Five is every header RFC 8200's
 *     order allows without IPsec (hop-by-hop, destination options, routing,
 *     fragment, destination options);
 *   - a hop-by-hop header anywhere but first is refused (PARSE_BAD_HEADER,
 *     RFC 8200 4.1), as the server's stack would;
 *   - a routing header with segments left is refused: the VIP is not the
 *     packet's final destination (PARSE_EXT_CHAIN);
 *   - a fragment — first or not — is refused (PARSE_FRAGMENT), as IPv4
 *     fragments are: a non-first fragment has no ports, so it cannot find
 *     its bucket, and a first fragment forwarded without the rest is of no
 *     use to a server. An atomic fragment (offset 0, no more fragments,
 *     RFC 6946) is a whole packet and is parsed on;
 *   - anything else before TCP or UDP (AH, ESP, no next header, unknown) is
 *     PARSE_NOT_TCP.
 *
 * The walk is an unrolled loop of IPV6_MAX_EXT steps, each checking the
 * next header against data_end before it reads it. In either family ICMP
 * (ICMPv6) is PARSE_ICMP, for the caller to decide.
 */
#ifndef BEAMER_PARSE_H
#define BEAMER_PARSE_H

#include <linux/ipv6.h>
#include "defs.h"

enum parse_verdict {
	PARSE_OK = 0,
	PARSE_TRUNCATED,  /* a header ends past the packet, or total length does */
	PARSE_BAD_HEADER, /* a field no valid packet has (version, IHL, data offset) */
	PARSE_IP_OPTIONS, /* IPv4 header longer than 20 bytes */
	PARSE_FRAGMENT,   /* MF set or non-zero fragment offset; an IPv6 fragment */
	PARSE_NOT_TCP,    /* another transport protocol (name kept: the counter's) */
	PARSE_EXT_CHAIN,  /* IPv6 extension headers beyond the bound, or a routing header not done */
	PARSE_ICMP,       /* ICMP or ICMPv6: the caller decides */
};

#define ETH_P_IPV6_BE bpf_htons(ETH_P_IPV6)
#define IPV6_MAX_EXT 5          /* extension headers walked at most */
#define IPV6_MAX_EXT_BYTES 256  /* their total length at most */

#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60
#define NEXTHDR_ICMPV6 58

/* The IP header's fixed length: 20 or 40 bytes. */
#define L3_LEN(is_ipv6) ((is_ipv6) ? sizeof(struct ipv6hdr) : sizeof(struct iphdr))

/* The fixed IP header after the Ethernet header, or NULL when the frame is
 * not of the family or too short to hold one. */
INLINE void *l3_after_eth(void *data, void *data_end, const int is_ipv6)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;

	if (l3 + L3_LEN(is_ipv6) > data_end)
		return NULL;
	if (eth->h_proto != (is_ipv6 ? ETH_P_IPV6_BE : bpf_htons(ETH_P_IP)))
		return NULL;
	return l3;
}

/* The IP packet's length from its header: IPv4's total length, or IPv6's
 * payload length plus the fixed header. */
INLINE __u32 l3_tot_len(void *l3, const int is_ipv6)
{
	if (is_ipv6)
		return bpf_ntohs(((struct ipv6hdr *)l3)->payload_len) + sizeof(struct ipv6hdr);
	return bpf_ntohs(((struct iphdr *)l3)->tot_len);
}

/* Validates an IPv4 header whose fixed 20 bytes are known to be present and
 * that must have no options; checks the total length against avail, the
 * bytes the packet holds from the start of this header (in tc, part of them
 * may lie outside the linear data). */
INLINE enum parse_verdict check_ipv4_plain(struct iphdr *ip, __u32 avail)
{
	if (ip->version != 4 || ip->ihl < 5)
		return PARSE_BAD_HEADER;
	if (ip->ihl != 5)
		return PARSE_IP_OPTIONS;
	__u16 tot = bpf_ntohs(ip->tot_len);
	if (tot < sizeof(*ip))
		return PARSE_BAD_HEADER;
	if (tot > avail)
		return PARSE_TRUNCATED;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return PARSE_FRAGMENT;
	return PARSE_OK;
}

struct ipv6_opt_hdr6 {
	__u8 nexthdr;
	__u8 hdrlen; /* 8-byte units beyond the first 8 (fragment: reserved) */
	__u8 b2;     /* routing: type; fragment: offset high bits */
	__u8 b3;     /* routing: segments left; fragment: offset low bits, M */
};

/*
 * Walks the extension headers of the IPv6 packet ip6 (whose payload_len
 * must fit avail, the bytes from ip6 on). *proto is the upper-layer
 * protocol and *l4_off its offset from ip6 on PARSE_OK (TCP or UDP) and
 * PARSE_ICMP.
 */
INLINE enum parse_verdict ipv6_walk(struct ipv6hdr *ip6, void *data_end, __u32 avail, __u8 *proto, __u32 *l4_off)
{
	__u32 plen = bpf_ntohs(ip6->payload_len);
	__u8 nh = ip6->nexthdr;
	__u32 off = sizeof(*ip6);

	if (ip6->version != 6)
		return PARSE_BAD_HEADER;
	if (plen + sizeof(*ip6) > avail)
		return PARSE_TRUNCATED;
#pragma unroll
	for (int i = 0; i < IPV6_MAX_EXT; i++) {
		if (nh != NEXTHDR_HOP && nh != NEXTHDR_ROUTING && nh != NEXTHDR_DEST && nh != NEXTHDR_FRAGMENT)
			break;
		if (nh == NEXTHDR_HOP && i > 0)
			return PARSE_BAD_HEADER; /* hop-by-hop only first (RFC 8200 4.1) */
		struct ipv6_opt_hdr6 *h = (void *)ip6 + (off & 0x1ff);
		if ((void *)(h + 1) > data_end)
			return PARSE_TRUNCATED;
		__u32 len = nh == NEXTHDR_FRAGMENT ? 8 : ((__u32)h->hdrlen + 1) * 8;
		if (nh == NEXTHDR_FRAGMENT) {
			/* offset (13 bits) and M: anything but an atomic fragment */
			if (((__u16)h->b2 << 8 | h->b3) & 0xfff9)
				return PARSE_FRAGMENT;
		} else if (nh == NEXTHDR_ROUTING && h->b3) {
			return PARSE_EXT_CHAIN;
		}
		off += len;
		if (off > sizeof(*ip6) + IPV6_MAX_EXT_BYTES)
			return PARSE_EXT_CHAIN;
		if (off > plen + sizeof(*ip6))
			return PARSE_TRUNCATED;
		nh = h->nexthdr;
	}
	*proto = nh;
	*l4_off = off;
	if (nh == NEXTHDR_HOP || nh == NEXTHDR_ROUTING || nh == NEXTHDR_DEST || nh == NEXTHDR_FRAGMENT)
		return PARSE_EXT_CHAIN;
	if (nh == NEXTHDR_ICMPV6)
		return PARSE_ICMP;
	if (nh != IPPROTO_TCP && nh != IPPROTO_UDP)
		return PARSE_NOT_TCP;
	return PARSE_OK;
}

/*
 * The IP header at l3 of either family, whose fixed part is known to be
 * present (l3_after_eth), checked against avail, the bytes the packet holds
 * from l3 on: IPv4 by check_ipv4_plain, IPv6 by ipv6_walk. On PARSE_OK (TCP
 * or UDP) and PARSE_ICMP, *proto is the transport protocol and *l4_off its
 * header's offset from l3.
 */
INLINE enum parse_verdict parse_l3(void *l3, void *data_end, __u32 avail, __u8 *proto, __u32 *l4_off,
				   const int is_ipv6)
{
	if (is_ipv6)
		return ipv6_walk(l3, data_end, avail, proto, l4_off);

	struct iphdr *ip = l3;
	enum parse_verdict pv = check_ipv4_plain(ip, avail);
	if (pv != PARSE_OK)
		return pv;
	*proto = ip->protocol;
	*l4_off = sizeof(*ip);
	if (ip->protocol == IPPROTO_ICMP)
		return PARSE_ICMP;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return PARSE_NOT_TCP;
	return PARSE_OK;
}

#endif
