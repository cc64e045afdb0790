/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's side of GUE over an IPv4 outer header (gue.h): which UDP
 * ports carry GUE to this server, and the checks that turn a GUE packet
 * into what the IP-in-IP path sees — an outer length to strip and, when
 * present, a Beamer option (the private data is the option's bytes). The tc
 * program and its XDP fast path (agent.c, agent_outer.h) both call these.
 */
#ifndef BEAMER_GUE_AGENT_H
#define BEAMER_GUE_AGENT_H

#include <linux/ipv6.h>
#include "defs.h"
#include "limits.h"
#include "gue.h"
#include "csum.h"

/* gue_ports[port] != 0: UDP to this server's address on port (host order)
 * is GUE from a mux or a fellow server (pkg/dataplane AgentOptions.GUEPorts;
 * the default port always). An array: one lookup, no hashing, for every UDP
 * packet to the server. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PORT_SPACE);
	__type(key, __u32);
	__type(value, __u8);
} gue_ports SEC(".maps");

/* The UDP header of an IPv4 packet (20-byte header) to one of our GUE
 * ports, or NULL. A UDP packet with IPv4 options is no GUE of ours. */
INLINE struct udphdr *gue4_udp(struct iphdr *outer, void *data_end)
{
	struct udphdr *udp = (void *)(outer + 1);

	if (outer->protocol != IPPROTO_UDP || outer->ihl != 5)
		return NULL;
	if ((void *)(udp + 1) > data_end)
		return NULL;
	__u32 port = bpf_ntohs(udp->dest);
	__u8 *on = bpf_map_lookup_elem(&gue_ports, &port);
	return on && *on ? udp : NULL;
}

enum gue_verdict {
	GUE_TRUNCATED = 1, /* headers end past the packet */
	GUE_BAD_HEADER,    /* UDP length disagrees with the IP total length */
	GUE_BAD_OPTION,    /* GUE header or private data other than one valid option */
};

/* Checks the UDP and GUE headers after a validated 20-byte outer IPv4
 * header of outer_tot bytes. Returns the outer length (IPv4 + UDP + GUE +
 * private data: GUE4_LEN_PLAIN, or GUE4_LEN_WITH(n) with the option at
 * GUE4_LEN_PLAIN from the outer header), or -(enum gue_verdict). A value,
 * not pointers: the agent's stack is nearly full. */
INLINE int gue4_parse(struct iphdr *outer, struct udphdr *udp, void *data_end, __u16 outer_tot)
{
	struct guehdr *g = (void *)(udp + 1);
	int n;

	if ((void *)(g + 1) > data_end)
		return -GUE_TRUNCATED;
	if (bpf_ntohs(udp->len) != outer_tot - OUTER_LEN_PLAIN)
		return -GUE_BAD_HEADER;
	if (!(g->hlen & GUE_HLEN_MASK)) {
		if (g->hlen || g->proto != GUE_PROTO_IPV4 || g->flags)
			return -GUE_BAD_OPTION;
		return GUE4_LEN_PLAIN;
	}
	/* Private data: a valid packet holds the inner IPv4 and UDP headers
	 * after at least 48 bytes, so the longest outer headers are there. */
	if ((void *)outer + GUE4_LEN_MAX > data_end)
		return -GUE_TRUNCATED;
	int priv = gue_check(g, GUE_PROTO_IPV4, 4, &n);
	if (priv < BEAMER_OPT_FIXED || priv > BEAMER_OPT_MAX)
		return -GUE_BAD_OPTION;
	return GUE4_LEN_PLAIN + priv;
}

/* Is a GUE packet's nonzero UDP checksum right (issue 23)? Over the
 * pseudo-header of the outer IPv4 (20 bytes) or IPv6 header, the UDP
 * header and the udp->len bytes from it, which the caller checked against
 * the outer total length. Pulls the whole packet into the linear data:
 * every packet pointer of the caller is invalid afterwards. 0 when it is
 * wrong, or cannot be verified (longer than CSUM_MAX_BYTES: the muxes and
 * agents send 0, never such a checksum). */
INLINE int gue_udp_csum_ok(struct __sk_buff *skb, const int ipv6)
{
	if (bpf_skb_pull_data(skb, skb->len))
		return 0;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct udphdr *udp;
	__u64 sum;

	if (ipv6) {
		struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > data_end)
			return 0;
		sum = csum_addr(ip6->saddr.in6_u.u6_addr32, 4) + csum_addr(ip6->daddr.in6_u.u6_addr32, 4);
	} else {
		struct iphdr *ip = data + sizeof(struct ethhdr);
		udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > data_end)
			return 0;
		sum = csum_addr(&ip->saddr, 1) + csum_addr(&ip->daddr, 1);
	}
	/* The pseudo-header's protocol and length words, in memory order. */
	sum += bpf_htons(IPPROTO_UDP) + udp->len;
	__s64 s = csum_add_bytes(udp, data_end, bpf_ntohs(udp->len), sum);
	return s >= 0 && csum_fold64((__u64)s) == 0;
}

#endif
