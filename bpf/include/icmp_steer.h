/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP and ICMPv6 to a VIP (issues 16, 17), one path for both families
 * (is_ipv6 a constant at each call).
 *
 * "Fragmentation needed" (ICMP type 3 code 4, RFC 1191) and "Packet Too
 * Big" (ICMPv6 type 2, RFC 8201): servers answer clients directly from the
 * VIP (DSR), so a router on the way back that cannot forward a large reply
 * tells the VIP, and the message reaches a mux. The server that sent the
 * reply must get it, or path-MTU discovery black-holes the connection. The
 * message quotes the reply's IP header and first 8 bytes: VIP:port ->
 * client:port. Reversed, that is the connection's own flow (client -> VIP),
 * and the mux forwards the message as it would a packet of that flow: the
 * same bucket, with the bucket's history in the option, so the agents
 * daisy-chain it to the server holding the connection (bpf/agent.c looks
 * up the quoted connection's socket).
 *
 * Echo requests are answered by the mux (only those whose checksum is
 * right), passed to the mux host's stack or dropped, by the instance's
 * policy (vip_info.flags). Every other ICMP message to a VIP is dropped.
 * Each outcome has its counter.
 */
#ifndef BEAMER_ICMP_STEER_H
#define BEAMER_ICMP_STEER_H

#include "defs.h"
#include "csum.h"
#include "parse.h"
#include "flow.h"

#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
#define ICMP_UNREACH 3
#define ICMP_UNREACH_NEEDFRAG 4
#define ICMP6_ECHO_REQUEST 128
#define ICMP6_ECHO_REPLY 129

struct icmp_hdr {
	__u8 type;
	__u8 code;
	__sum16 check;
	__be32 rest;
};

#define ICMP6_TYPE_PACKET_TOO_BIG 2

enum icmp_kind {
	ICMP_KIND_OTHER = 0,  /* a message the mux does not handle */
	ICMP_KIND_ECHO,       /* echo request */
	ICMP_KIND_TOO_BIG,    /* frag needed, Packet Too Big: f the quoted connection's flow */
	ICMP_KIND_BAD_QUOTE,  /* one whose quote is not a VIP's TCP/UDP packet */
};

/*
 * Classifies the ICMP message at l4_off from the IP header l3 (validated by
 * parse_l3; ICMPv6 must follow the fixed header: l4_off 40). For a frag
 * needed or a Packet Too Big, fills f with the flow of the connection it
 * quotes, client -> VIP: the quoted packet went VIP -> client, so source
 * and destination swap; *quote is the quoted IP header (whose destination
 * is the client). The quote must be a plain IP header from this VIP (IPv4
 * without options, IPv6 without extension headers) and at least the 8
 * bytes that hold the ports.
 */
INLINE enum icmp_kind icmp_classify(void *l3, void *data_end, __u32 l4_off, struct flow *f, void **quote,
				    const int is_ipv6)
{
	const __u32 hlen = L3_LEN(is_ipv6);
	struct icmp_hdr *icmp = l3 + hlen;
	void *q = icmp + 1;
	__be16 *ports = q + hlen;
	__u32 tot = l3_tot_len(l3, is_ipv6);

	if ((void *)(icmp + 1) > data_end)
		return ICMP_KIND_OTHER;
	if (is_ipv6 ? l4_off != hlen : tot < hlen + sizeof(*icmp))
		return ICMP_KIND_OTHER;
	if (icmp->type == (is_ipv6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO_REQUEST) && icmp->code == 0)
		return ICMP_KIND_ECHO;
	if (is_ipv6 ? icmp->type != ICMP6_TYPE_PACKET_TOO_BIG || icmp->code != 0
		    : icmp->type != ICMP_UNREACH || icmp->code != ICMP_UNREACH_NEEDFRAG)
		return ICMP_KIND_OTHER;
	if ((void *)(ports + 2) > data_end || tot < hlen + sizeof(*icmp) + hlen + 4)
		return ICMP_KIND_BAD_QUOTE;
	if (is_ipv6) {
		struct ipv6hdr *ip6 = l3, *q6 = q;
		if (q6->version != 6 || !addr6_eq(&q6->saddr, &ip6->daddr) ||
		    (q6->nexthdr != IPPROTO_TCP && q6->nexthdr != IPPROTO_UDP))
			return ICMP_KIND_BAD_QUOTE;
		f->saddr = addr6_fold(&q6->daddr);
		f->daddr = addr6_fold(&q6->saddr);
		f->proto = q6->nexthdr;
	} else {
		struct iphdr *ip = l3, *q4 = q;
		if (q4->version != 4 || q4->ihl != 5 || q4->saddr != ip->daddr ||
		    (q4->protocol != IPPROTO_TCP && q4->protocol != IPPROTO_UDP))
			return ICMP_KIND_BAD_QUOTE;
		f->saddr = q4->daddr;
		f->daddr = q4->saddr;
		f->proto = q4->protocol;
	}
	f->sport = ports[1];
	f->dport = ports[0];
	f->tcp_flags = 0;
	f->l4_off = hlen + sizeof(*icmp) + hlen;
	*quote = q;
	return ICMP_KIND_TOO_BIG;
}

/*
 * Is an ICMP message's checksum right (issue 23)? Over the bytes from the
 * message (l4_off from l3; IPv4's is always 20) to the end of the IP
 * packet (parse_l3 put it within the packet), and for ICMPv6 the
 * pseudo-header (addresses, upper-layer length, next header 58) too. An
 * echo request with a wrong one is not answered: the reply would carry it
 * on.
 */
INLINE int icmp_csum_ok(void *l3, void *data_end, __u32 l4_off, const int is_ipv6)
{
	__u32 end = l3_tot_len(l3, is_ipv6);
	__u32 off = is_ipv6 ? l4_off : sizeof(struct iphdr);
	__u64 sum = 0;

	if (off < L3_LEN(is_ipv6) || off > 512 || end < off)
		return 0;
	__u32 len = end - off;
	if (is_ipv6) {
		struct ipv6hdr *ip6 = l3;
		sum = csum_addr(ip6->saddr.in6_u.u6_addr32, 4) + csum_addr(ip6->daddr.in6_u.u6_addr32, 4) +
		      bpf_htonl(len) + bpf_htonl(IPPROTO_ICMPV6);
	}
	__s64 s = csum_add_bytes(l3 + off, data_end, len, sum);
	return s >= 0 && csum_fold64((__u64)s) == 0;
}

/* Turns an echo request into its reply in place and sends it back the way
 * it came, for both families (is_ipv6 a constant at each call): MACs and
 * addresses swapped, type echo reply, TTL or hop limit 64, the checksums
 * updated — IPv4's header sum recomputed (the request's IPv4 header has no
 * options: checked); the ICMP sum by RFC 1624 for the type byte alone,
 * which is all that changes for ICMPv6 too (swapping the addresses leaves
 * its pseudo-header sum unchanged). */
INLINE int xdp_echo_reply(struct xdp_md *ctx, const int is_ipv6)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct icmp_hdr *icmp = is_ipv6 ? (void *)(ip6 + 1) : (void *)(ip + 1);

	if ((void *)(icmp + 1) > data_end)
		return XDP_DROP;
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);

	if (is_ipv6) {
		struct in6_addr a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->hop_limit = 64;
	} else {
		__be32 a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		ip->ttl = 64;
		ip->check = 0;
		ip->check = ipv4_header_csum(ip, sizeof(*ip) / 2);
	}

	/* RFC 1624: the type byte changes in the first 16-bit word. */
	__u16 old = *(__u16 *)icmp;
	icmp->type = is_ipv6 ? ICMP6_ECHO_REPLY : ICMP_ECHO_REPLY;
	__u16 new = *(__u16 *)icmp;
	__u32 sum = (__u16)~icmp->check + (__u16)~old + new;
	icmp->check = csum_fold32(sum);
	return XDP_TX;
}

#endif
