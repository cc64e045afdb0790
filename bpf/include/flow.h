/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The flow frame: what the mux parses out of a packet once, before any
 * strategy looks at it. Every decide_NAME (bpf/strategy/NAME.h) reads the
 * flow instead of the transport header, so a strategy does not care
 * whether the packet is TCP or UDP: the 5-tuple, the protocol and, for
 * TCP, the flags byte are all it needs. (Cheetah alone also reads the TCP
 * timestamp option; it gets the header pointer beside the flow.)
 *
 * IPv6 packets fill the same struct flow: each 128-bit address is folded to
 * 32 bits (the XOR of its four words) and the flow hash is then the IPv4
 * one, unchanged (flow_hash.h; pkg/wire FlowHash6 is the Go twin). Folding
 * keeps struct flow, the strategies and the IPv4 path exactly as they are;
 * the hash still mixes every address bit, and the 5-tuple's ports spread
 * one client's connections as for IPv4. Whoever needs the full addresses
 * (the agent's socket lookup, the mux's outer header) reads them from the
 * IPv6 header.
 */
#ifndef BEAMER_FLOW_H
#define BEAMER_FLOW_H

#include "defs.h"
#include "parse.h"
#include "flow_hash.h"

/* TCP flag bits as they sit in byte 13 of the TCP header. */
#define TCPF_FIN 0x01
#define TCPF_SYN 0x02
#define TCPF_RST 0x04
#define TCPF_ACK 0x10

struct flow {
	__be32 saddr;   /* client */
	__be32 daddr;   /* VIP */
	__be16 sport;   /* network order, as in the packet */
	__be16 dport;
	__u8 proto;     /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 tcp_flags; /* TCP: byte 13 of the header (TCPF_*); 0 otherwise */
	__u16 l4_off;   /* offset of the transport header from the IP header */
};

/* A connection request: SYN without ACK. Never true for UDP. */
INLINE int flow_is_syn(const struct flow *f)
{
	return (f->tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN;
}

/* The flow hash of the packet (flow_hash.h), seeded with its protocol. */
INLINE __u32 flow_hash_of(const struct flow *f)
{
	return flow_hash(f->saddr, f->daddr, f->sport, f->dport, f->proto);
}

/* Host-order destination port. */
INLINE __u16 flow_dport(const struct flow *f)
{
	return bpf_ntohs(f->dport);
}

/* Fills f's transport part from the TCP or UDP header (proto) at offset off
 * from the IP header l3, of either family: checked against the packet
 * (data_end) and the IP packet's end (end bytes from l3: the data offset or
 * the UDP length must fit). *tcpp is the TCP header for the few who need
 * more than the flow (NULL for UDP). The addresses are the caller's. */
INLINE enum parse_verdict parse_l4(void *l3, __u32 off, __u32 end, __u8 proto, void *data_end, struct flow *f,
				   struct tcphdr **tcpp)
{
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l3 + off;
		if ((void *)(udp + 1) > data_end)
			return PARSE_TRUNCATED;
		__u16 len = bpf_ntohs(udp->len);
		if (len < sizeof(*udp))
			return PARSE_BAD_HEADER;
		if (off + len > end)
			return PARSE_TRUNCATED;
		f->sport = udp->source;
		f->dport = udp->dest;
		f->tcp_flags = 0;
		*tcpp = NULL;
	} else {
		struct tcphdr *tcp = l3 + off;
		if ((void *)(tcp + 1) > data_end)
			return PARSE_TRUNCATED;
		if (tcp->doff < 5)
			return PARSE_BAD_HEADER;
		if (off + tcp->doff * 4 > end)
			return PARSE_TRUNCATED;
		f->sport = tcp->source;
		f->dport = tcp->dest;
		f->tcp_flags = ((__u8 *)tcp)[13];
		*tcpp = tcp;
	}
	f->proto = proto;
	f->l4_off = off;
	return PARSE_OK;
}

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

/*
 * Fills f from the IP packet at l3 of either family (avail bytes from l3
 * on, some maybe beyond data_end in tc): the IP header checked as parse.h
 * says (parse_l3), then the TCP or UDP header checked against the IP
 * packet's length (parse_l4), the addresses copied (IPv4) or folded
 * (IPv6). *tcpp is the TCP header (NULL for UDP). ICMP and ICMPv6 return
 * PARSE_ICMP with only f->l4_off set (the ICMP header's offset).
 */
INLINE enum parse_verdict parse_flow(void *l3, void *data_end, __u32 avail, struct flow *f, struct tcphdr **tcpp,
				     const int is_ipv6)
{
	__u8 proto = 0;
	__u32 off = 0;
	enum parse_verdict pv = parse_l3(l3, data_end, avail, &proto, &off, is_ipv6);

	f->l4_off = off; /* for ICMP: where its header is */
	if (pv != PARSE_OK)
		return pv;
	if (is_ipv6)
		off &= 0x1ff; /* at most 40 + IPV6_MAX_EXT_BYTES: tells the verifier */
	pv = parse_l4(l3, off, l3_tot_len(l3, is_ipv6), proto, data_end, f, tcpp);
	if (pv != PARSE_OK)
		return pv;
	if (is_ipv6) {
		struct ipv6hdr *ip6 = l3;
		f->saddr = addr6_fold(&ip6->saddr);
		f->daddr = addr6_fold(&ip6->daddr);
	} else {
		struct iphdr *ip = l3;
		f->saddr = ip->saddr;
		f->daddr = ip->daddr;
	}
	return PARSE_OK;
}

#endif
