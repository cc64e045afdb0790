/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Header parsing shared by the mux (XDP) and the agent (tc). Every function
 * checks bounds against data_end before it reads, and says why it refused a
 * packet so the caller can count the reason.
 */
#ifndef BEAMER_PARSE_H
#define BEAMER_PARSE_H

#include "defs.h"

enum parse_verdict {
	PARSE_OK = 0,
	PARSE_TRUNCATED,  /* a header ends past the packet, or total length does */
	PARSE_BAD_HEADER, /* a field no valid packet has (version, IHL, data offset) */
	PARSE_IP_OPTIONS, /* IPv4 header longer than 20 bytes */
	PARSE_FRAGMENT,   /* MF set or non-zero fragment offset */
	PARSE_NOT_TCP,    /* another transport protocol (name kept: the counter's) */
};

/* The Ethernet header and the fixed part of an IPv4 header, or NULL when the
 * frame is not IPv4 or too short to hold one. */
INLINE struct iphdr *ipv4_after_eth(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > data_end)
		return NULL;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return NULL;
	return ip;
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

/* The TCP header right after a 20-byte IPv4 header, with its data offset
 * checked against the IP total length and the packet. */
INLINE enum parse_verdict parse_tcp_after(struct iphdr *ip, void *data_end, struct tcphdr **tcpp)
{
	struct tcphdr *tcp = (void *)(ip + 1);

	if (ip->protocol != IPPROTO_TCP)
		return PARSE_NOT_TCP;
	if ((void *)(tcp + 1) > data_end)
		return PARSE_TRUNCATED;
	if (tcp->doff < 5)
		return PARSE_BAD_HEADER;
	if (sizeof(*ip) + tcp->doff * 4 > bpf_ntohs(ip->tot_len))
		return PARSE_TRUNCATED;
	*tcpp = tcp;
	return PARSE_OK;
}

/* The UDP header right after a 20-byte IPv4 header, its length checked
 * against the IP total length and the packet's. */
INLINE enum parse_verdict parse_udp_after(struct iphdr *ip, void *data_end, struct udphdr **udpp)
{
	struct udphdr *udp = (void *)(ip + 1);

	if (ip->protocol != IPPROTO_UDP)
		return PARSE_NOT_TCP;
	if ((void *)(udp + 1) > data_end)
		return PARSE_TRUNCATED;
	__u16 len = bpf_ntohs(udp->len);
	if (len < sizeof(*udp))
		return PARSE_BAD_HEADER;
	if (sizeof(*ip) + len > bpf_ntohs(ip->tot_len))
		return PARSE_TRUNCATED;
	*udpp = udp;
	return PARSE_OK;
}

#endif
