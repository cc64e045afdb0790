/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP "fragmentation needed" (type 3, code 4, RFC 792 / RFC 1191) for a VIP
 * packet that would exceed the egress MTU once encapsulated. The mux cannot
 * fragment (servers would have to reassemble, and fragments carry no ports
 * to hash), so it tells the client the largest packet that fits: the
 * egress MTU minus the encapsulation overhead. The reply is built in place
 * from the packet and sent back the way it came (XDP_TX, MACs swapped):
 *
 *   Ethernet | IPv4 VIP -> client, proto 1 | ICMP 3/4, next-hop MTU |
 *   the packet's IPv4 header (20 bytes) and first 8 bytes of TCP
 *
 * The source is the VIP: the address the client's network routes to the
 * load balancer, so source-address filters on the way let it through
 * (the mux's own address may be internal).
 */
#ifndef BEAMER_ICMP_TOO_BIG_H
#define BEAMER_ICMP_TOO_BIG_H

#include "defs.h"
#include "csum.h"

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

/* Turns the frame (Ethernet, IPv4 of 20 bytes, at least 8 bytes after it:
 * the caller parsed TCP) into the reply. Returns 0, or -1 when the frame
 * could not be resized (the caller drops it). */
INLINE int xdp_icmp_frag_needed(struct xdp_md *ctx, __u16 next_hop_mtu)
{
	const int grow = sizeof(struct iphdr) + ICMP_HDR_LEN;

	if (bpf_xdp_adjust_head(ctx, -grow))
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	/* Trim to the reply's length: new headers, then the quoted bytes. */
	if (bpf_xdp_adjust_tail(ctx, (int)ICMP_REPLY_LEN - (int)(data_end - data)))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + ICMP_REPLY_LEN > data_end)
		return -1;

	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct icmp_frag_needed *icmp = (void *)(ip + 1);
	struct ethhdr *old_eth = data + grow;
	struct iphdr *quoted = (void *)(icmp + 1); /* the packet's own header, in place */

	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, old_eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, old_eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);

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
	return 0;
}

#endif
