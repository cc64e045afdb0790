/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMP to a VIP (issue 17).
 *
 * "Fragmentation needed" (type 3 code 4, RFC 1191): servers answer clients
 * directly from the VIP (DSR), so a router on the way back that cannot
 * forward a large reply tells the VIP, and the message reaches a mux. The
 * server that sent the reply must get it, or path-MTU discovery black-holes
 * the connection. The message quotes the reply's IPv4 header and first 8
 * bytes: VIP:port -> client:port. Reversed, that is the connection's own
 * flow (client -> VIP), and the mux forwards the message as it would a
 * packet of that flow: the same bucket, with the bucket's history in the
 * option, so the agents daisy-chain it to the server holding the
 * connection (bpf/agent.c looks up the quoted connection's socket).
 *
 * Echo requests (type 8) are answered by the mux (only those whose ICMP
 * checksum is right), passed to the mux host's stack or dropped, by the
 * instance's policy (vip_info.flags). Every other
 * ICMP message to a VIP is dropped. Each outcome has its counter.
 */
#ifndef BEAMER_ICMP_STEER_H
#define BEAMER_ICMP_STEER_H

#include "defs.h"
#include "csum.h"
#include "flow.h"
#include <linux/ipv6.h>

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

enum icmp_kind {
	ICMP_KIND_OTHER = 0,   /* a message the mux does not handle */
	ICMP_KIND_ECHO,        /* echo request */
	ICMP_KIND_FRAG_NEEDED, /* f: the quoted connection's flow */
	ICMP_KIND_BAD_QUOTE,   /* frag needed whose quote is not a VIP's TCP/UDP packet */
};

/*
 * Classifies an ICMP message to a VIP (ip: its validated 20-byte IPv4
 * header). For a frag-needed, fills f with the flow of the connection it
 * quotes, client -> VIP: the quoted packet went VIP -> client, so source
 * and destination swap. The quote must be a plain IPv4 header from this
 * VIP and at least the 8 bytes that hold the ports.
 */
INLINE enum icmp_kind icmp_classify(struct iphdr *ip, void *data_end, struct flow *f)
{
	struct icmp_hdr *icmp = (void *)(ip + 1);
	struct iphdr *q = (void *)(icmp + 1);
	__be16 *ports = (void *)(q + 1);

	if ((void *)(icmp + 1) > data_end || bpf_ntohs(ip->tot_len) < sizeof(*ip) + sizeof(*icmp))
		return ICMP_KIND_OTHER;
	if (icmp->type == ICMP_ECHO_REQUEST && icmp->code == 0)
		return ICMP_KIND_ECHO;
	if (icmp->type != ICMP_UNREACH || icmp->code != ICMP_UNREACH_NEEDFRAG)
		return ICMP_KIND_OTHER;
	if ((void *)(ports + 2) > data_end ||
	    bpf_ntohs(ip->tot_len) < sizeof(*ip) + sizeof(*icmp) + sizeof(*q) + 4)
		return ICMP_KIND_BAD_QUOTE;
	if (q->version != 4 || q->ihl != 5 || q->saddr != ip->daddr ||
	    (q->protocol != IPPROTO_TCP && q->protocol != IPPROTO_UDP))
		return ICMP_KIND_BAD_QUOTE;
	f->saddr = q->daddr;
	f->daddr = q->saddr;
	f->sport = ports[1];
	f->dport = ports[0];
	f->proto = q->protocol;
	f->tcp_flags = 0;
	f->l4_off = sizeof(*ip) + sizeof(*icmp) + sizeof(*q);
	return ICMP_KIND_FRAG_NEEDED;
}

/* Is an ICMP message's checksum right (issue 23)? Over the tot_len - 20
 * bytes after the validated 20-byte IPv4 header ip (check_ipv4_plain put
 * tot_len within the packet). An echo request with a wrong one is not
 * answered: the reply would carry it on. */
INLINE int icmp_csum_ok(struct iphdr *ip, void *data_end)
{
	__u32 len = bpf_ntohs(ip->tot_len);

	if (len < sizeof(*ip))
		return 0;
	__s64 s = csum_add_bytes(ip + 1, data_end, len - sizeof(*ip), 0);
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
