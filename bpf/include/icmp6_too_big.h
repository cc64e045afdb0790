/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMPv6 Packet Too Big (type 2, RFC 4443 / RFC 8201) for an IPv6 VIP
 * packet that would exceed the egress MTU once in GUE over IPv6: IPv6
 * routers never fragment, and the mux cannot, so it tells the client the
 * largest packet that fits (the egress MTU minus the encapsulation, at
 * least IPv6's 1280). Built in place and sent back the way the packet came,
 * from the VIP (as icmp_too_big.h does for IPv4):
 *
 *   Ethernet | IPv6 VIP -> client, next header 58 | ICMPv6 2/0, MTU |
 *   the packet's first ICMP6_PTB_QUOTE bytes (its IPv6 header, extension
 *   headers and ports; RFC 4443 asks for as much as fits in 1280 bytes,
 *   a fixed 128 keeps the checksum one unrolled sum)
 */
#ifndef BEAMER_ICMP6_TOO_BIG_H
#define BEAMER_ICMP6_TOO_BIG_H

#include "defs.h"
#include "csum.h"
#include "flow6.h"

#define ICMP6_PACKET_TOO_BIG 2
#define ICMP6_PTB_QUOTE 128
#define ICMP6_PTB_MSG (8 + ICMP6_PTB_QUOTE)
#define ICMP6_PTB_LEN (sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + ICMP6_PTB_MSG)
#define IPV6_MIN_MTU 1280

struct icmp6_too_big {
	__u8 type;
	__u8 code;
	__sum16 check;
	__be32 mtu;
};

/* Turns the frame (Ethernet, IPv6, at least ICMP6_PTB_QUOTE bytes from the
 * IPv6 header on: the packet is too big to forward) into the message.
 * Returns 0, or -1 when the frame could not be resized. */
INLINE int xdp_icmp6_too_big(struct xdp_md *ctx, __u32 mtu)
{
	const int grow = sizeof(struct ipv6hdr) + 8;

	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (bpf_xdp_adjust_tail(ctx, (int)ICMP6_PTB_LEN - (int)(data_end - data)))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + ICMP6_PTB_LEN > data_end)
		return -1;

	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
	struct icmp6_too_big *icmp = (void *)(ip6 + 1);
	struct ethhdr *old_eth = data + grow;      /* overlaps the new headers: read first */
	struct ipv6hdr *quoted = (void *)(icmp + 1); /* the packet's own header, in place */

	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, old_eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, old_eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IPV6);

	__builtin_memset(ip6, 0, 4);
	ip6->version = 6;
	ip6->payload_len = bpf_htons(ICMP6_PTB_MSG);
	ip6->nexthdr = NEXTHDR_ICMPV6;
	ip6->hop_limit = 64;
	ip6->saddr = quoted->daddr;
	ip6->daddr = quoted->saddr;

	icmp->type = ICMP6_PACKET_TOO_BIG;
	icmp->code = 0;
	icmp->check = 0;
	icmp->mtu = bpf_htonl(mtu);
	/* Pseudo-header (addresses, length, next header), then the message. */
	const __u16 *w = (const __u16 *)&ip6->saddr;
	__u32 sum = bpf_htons(ICMP6_PTB_MSG) + bpf_htons(NEXTHDR_ICMPV6);
#pragma unroll
	for (int i = 0; i < 16; i++)
		sum += w[i];
	w = (const __u16 *)icmp;
#pragma unroll
	for (int i = 0; i < ICMP6_PTB_MSG / 2; i++)
		sum += w[i];
	icmp->check = csum_fold32(sum);
	return 0;
}

#endif
