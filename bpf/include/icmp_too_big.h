/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * "Too big" back to the client, for both families: a VIP packet that would
 * exceed the egress MTU once encapsulated. The mux cannot fragment (servers
 * would have to reassemble, and fragments carry no ports to hash), so it
 * tells the client the largest packet that fits: the egress MTU minus the
 * encapsulation overhead. The reply is built in place from the packet and
 * sent back the way it came (XDP_TX, MACs swapped), from the VIP: the
 * address the client's network routes to the load balancer, so
 * source-address filters on the way let it through (the mux's own address
 * may be internal). One path, xdp_icmp_too_big(ctx, mtu, is_ipv6), resizes
 * the frame and swaps the MACs; each family writes its own headers:
 *
 * IPv4, ICMP "fragmentation needed" (type 3, code 4, RFC 792 / RFC 1191):
 *
 *   Ethernet | IPv4 VIP -> client, proto 1 | ICMP 3/4, next-hop MTU |
 *   the packet's IPv4 header (20 bytes) and first 8 bytes of TCP
 *
 * IPv6, ICMPv6 Packet Too Big (type 2, RFC 4443 / RFC 8201; IPv6 routers
 * never fragment either; at least IPv6's 1280):
 *
 *   Ethernet | IPv6 VIP -> client, next header 58 | ICMPv6 2/0, MTU |
 *   the packet's first ICMP6_PTB_QUOTE bytes (its IPv6 header, extension
 *   headers and ports; RFC 4443 asks for as much as fits in 1280 bytes,
 *   a fixed 128 keeps the checksum one unrolled sum)
 */
#ifndef BEAMER_ICMP_TOO_BIG_H
#define BEAMER_ICMP_TOO_BIG_H

#include "defs.h"
#include "csum.h"
#include "flow.h"

#define ICMP_DEST_UNREACH 3
#define ICMP_FRAG_NEEDED 4
#define ICMP_QUOTED (sizeof(struct iphdr) + 8) /* RFC 792: header + 64 bits */
#define ICMP_HDR_LEN 8
#define ICMP_REPLY_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + ICMP_HDR_LEN + ICMP_QUOTED)
#define IPV4_MIN_MTU 68 /* RFC 791: every IPv4 link carries 68 bytes */

/* The ICMP header of a "fragmentation needed". */
struct icmp_frag_needed {
	__u8 type;
	__u8 code;
	__sum16 check;
	__be16 unused;
	__be16 mtu;
};

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

/* Writes the IPv4 reply's headers after Ethernet: ip, then the ICMP header;
 * quoted is the packet's own IPv4 header, in place after them. */
INLINE void icmp_frag_needed_fill(struct iphdr *ip, __u16 next_hop_mtu)
{
	struct icmp_frag_needed *icmp = (void *)(ip + 1);
	struct iphdr *quoted = (void *)(icmp + 1);

	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0xc0; /* internetwork control, as hosts send ICMP errors */
	ip->tot_len = bpf_htons(sizeof(struct iphdr) + ICMP_HDR_LEN + ICMP_QUOTED);
	ip->id = 0;
	ip->frag_off = bpf_htons(IP_DF); /* 56 bytes: never fragmented */
	ip->ttl = 64;
	ip->protocol = IPPROTO_ICMP;
	ip->check = 0;
	ip->saddr = quoted->daddr;
	ip->daddr = quoted->saddr;
	ip->check = ipv4_header_csum(ip, sizeof(struct iphdr) / 2);

	icmp->type = ICMP_DEST_UNREACH;
	icmp->code = ICMP_FRAG_NEEDED;
	icmp->check = 0;
	icmp->unused = 0;
	icmp->mtu = bpf_htons(next_hop_mtu);
	icmp->check = ipv4_header_csum(icmp, (ICMP_HDR_LEN + ICMP_QUOTED) / 2);
}

/* Writes the IPv6 reply's headers after Ethernet: ip6, then the ICMPv6
 * header; quoted is the packet's own IPv6 header, in place after them. */
INLINE void icmp6_too_big_fill(struct ipv6hdr *ip6, __u32 mtu)
{
	struct icmp6_too_big *icmp = (void *)(ip6 + 1);
	struct ipv6hdr *quoted = (void *)(icmp + 1);

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
}

/* Turns the frame (Ethernet, then for IPv4 a 20-byte header and at least 8
 * bytes after it — the caller parsed TCP —, for IPv6 at least
 * ICMP6_PTB_QUOTE bytes from the IPv6 header on) into the reply. Returns
 * 0, or -1 when the frame could not be resized (the caller drops it). */
INLINE int xdp_icmp_too_big(struct xdp_md *ctx, __u32 mtu, const int is_ipv6)
{
	const int grow = is_ipv6 ? sizeof(struct ipv6hdr) + 8 : sizeof(struct iphdr) + ICMP_HDR_LEN;
	const int len = is_ipv6 ? ICMP6_PTB_LEN : ICMP_REPLY_LEN;

	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	/* Trim to the reply's length: new headers, then the quoted bytes. */
	if (bpf_xdp_adjust_tail(ctx, len - (int)(data_end - data)))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + len > data_end)
		return -1;

	struct ethhdr *eth = data;
	struct ethhdr *old_eth = data + grow; /* overlaps the new headers: read first */
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, old_eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, old_eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	if (is_ipv6) {
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		icmp6_too_big_fill(data + sizeof(struct ethhdr), mtu);
	} else {
		eth->h_proto = bpf_htons(ETH_P_IP);
		icmp_frag_needed_fill(data + sizeof(struct ethhdr), mtu);
	}
	return 0;
}

#endif
