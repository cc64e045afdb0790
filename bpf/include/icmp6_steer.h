/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ICMPv6 Packet Too Big to an IPv6 VIP (RFC 8201), steered as IPv4's
 * "fragmentation needed" is (icmp_steer.h): servers answer clients from the
 * VIP (DSR), so a router that cannot forward a large reply tells the VIP,
 * and the message reaches a mux. It quotes the reply: VIP:port ->
 * client:port. Reversed, that is the connection's own flow, and the mux
 * forwards the message as a packet of that flow (same bucket, same
 * history), so the agents deliver it to the server holding the connection
 * (bpf/include/agent6.h looks its socket up by the quoted addresses).
 */
#ifndef BEAMER_ICMP6_STEER_H
#define BEAMER_ICMP6_STEER_H

#include "defs.h"
#include "flow6.h"

#define ICMP6_TYPE_PACKET_TOO_BIG 2
#define ICMP6_TYPE_ECHO_REQUEST 128

enum icmp6_kind {
	ICMP6_KIND_OTHER = 0,
	ICMP6_KIND_ECHO,
	ICMP6_KIND_TOO_BIG, /* f: the quoted connection's flow; *quote its IPv6 header */
};

/*
 * Classifies the ICMPv6 message right after ip6 (no extension headers
 * before it: l4_off is 40). For a Packet Too Big quoting an IPv6 TCP or UDP
 * packet from this VIP (no extension headers in the quote, its 8 bytes of
 * ports present), fills f with the connection's flow, client -> VIP, and
 * *quote with the quoted header (whose daddr is the client).
 */
INLINE enum icmp6_kind icmp6_classify(struct ipv6hdr *ip6, void *data_end, __u32 l4_off, struct flow *f,
				      struct ipv6hdr **quote)
{
	__u8 *icmp = (void *)(ip6 + 1);
	struct ipv6hdr *q = (void *)(icmp + 8);
	__be16 *ports = (void *)(q + 1);

	if (l4_off != sizeof(*ip6) || (void *)(icmp + 8) > data_end)
		return ICMP6_KIND_OTHER;
	if (icmp[0] == ICMP6_TYPE_ECHO_REQUEST && icmp[1] == 0)
		return ICMP6_KIND_ECHO;
	if (icmp[0] != ICMP6_TYPE_PACKET_TOO_BIG || icmp[1] != 0)
		return ICMP6_KIND_OTHER;
	if ((void *)(ports + 2) > data_end || bpf_ntohs(ip6->payload_len) < 8 + sizeof(*q) + 4)
		return ICMP6_KIND_OTHER;
	if (q->version != 6 || !addr6_eq(&q->saddr, &ip6->daddr) ||
	    (q->nexthdr != IPPROTO_TCP && q->nexthdr != IPPROTO_UDP))
		return ICMP6_KIND_OTHER;
	f->saddr = addr6_fold(&q->daddr);
	f->daddr = addr6_fold(&q->saddr);
	f->sport = ports[1];
	f->dport = ports[0];
	f->proto = q->nexthdr;
	f->tcp_flags = 0;
	f->l4_off = sizeof(*ip6) + 8 + sizeof(*q);
	*quote = q;
	return ICMP6_KIND_TOO_BIG;
}

#endif
