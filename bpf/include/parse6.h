/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * IPv6 parsing shared by the mux (XDP) and the agent (tc, XDP), with a
 * bounded treatment of extension headers (docs/wire-format.md, "IPv6"):
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
 *     PARSE_NOT_TCP; ICMPv6 is PARSE_ICMP6 for the caller to decide.
 *
 * The walk is an unrolled loop of IPV6_MAX_EXT steps, each checking the
 * next header against data_end before it reads it.
 */
#ifndef BEAMER_PARSE6_H
#define BEAMER_PARSE6_H

#include <linux/ipv6.h>
#include "defs.h"
#include "parse.h"

#define ETH_P_IPV6_BE bpf_htons(ETH_P_IPV6)
#define IPV6_MAX_EXT 5          /* extension headers walked at most */
#define IPV6_MAX_EXT_BYTES 256  /* their total length at most */

#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60
#define NEXTHDR_ICMPV6 58

/* Verdicts beyond parse.h's, for IPv6 alone. */
#define PARSE_EXT_CHAIN (PARSE_NOT_TCP + 1) /* extension headers beyond the bound, or a routing header not done */
#define PARSE_ICMP6 (PARSE_NOT_TCP + 2)     /* ICMPv6: the caller decides */

/* The fixed IPv6 header after the Ethernet header, or NULL when the frame
 * is not IPv6 or too short to hold one. */
INLINE struct ipv6hdr *ipv6_after_eth(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);

	if ((void *)(ip6 + 1) > data_end)
		return NULL;
	if (eth->h_proto != ETH_P_IPV6_BE)
		return NULL;
	return ip6;
}

struct ipv6_opt_hdr6 {
	__u8 nexthdr;
	__u8 hdrlen; /* 8-byte units beyond the first 8 (fragment: reserved) */
	__u8 b2;     /* routing: type; fragment: offset high bits */
	__u8 b3;     /* routing: segments left; fragment: offset low bits, M */
};

/*
 * Walks the extension headers of the validated-length IPv6 packet ip6
 * (whose payload_len fits avail, the bytes from ip6 on). On PARSE_OK,
 * *proto is the upper-layer protocol (TCP or UDP) and *l4_off its offset
 * from ip6; PARSE_ICMP6 sets them for ICMPv6.
 */
INLINE int ipv6_walk(struct ipv6hdr *ip6, void *data_end, __u32 avail, __u8 *proto, __u32 *l4_off)
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
		return PARSE_ICMP6;
	if (nh != IPPROTO_TCP && nh != IPPROTO_UDP)
		return PARSE_NOT_TCP;
	return PARSE_OK;
}

#endif
