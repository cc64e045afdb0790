/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's IPv6 path (issue 16): GUE over an IPv6 outer header (gue.h,
 * private data struct beamer_opt6 with 16-byte previous owners) carrying an
 * IPv6 packet to one of this server's IPv6 VIPs. The decision is the IPv4
 * path's (agent.c's header comment), step for step: trusted source, outer
 * and inner headers, known VIP; a SYN or a packet without private data is
 * kept; the newest (incarnation, generation) is remembered under the same
 * sanity bounds; a packet of a bucket that changed hands within the window
 * is kept if a local socket (or a SYN cookie) says it is ours, else chained
 * to the first previous owner at or after hop that is not us — in the same
 * encapsulation, GUE over IPv6, with the outer addresses and the hop byte
 * rewritten; a stale mux's packet is dropped. Outer extension headers are
 * never sent by a mux or agent and are not accepted; the inner packet's are
 * walked as parse.h bounds them.
 *
 * The XDP fast path's IPv6 twin is agent6_xdp.h.
 */
#ifndef BEAMER_AGENT6_H
#define BEAMER_AGENT6_H

#include "defs.h"
#include "parse.h"
#include "flow.h"
#include "gue.h"
#include "gue_agent.h"
#include "agent_maps.h"
#include "icmp_steer.h"
#include "agent_config.h"
#include "agent_verdict.h"
#include "agent_locality.h"
#include "agent_send.h"
#include "agent_epoch.h"
#include "capture.h"


/* Linear data for Ethernet, the longest IPv6 GUE headers, the inner IPv6
 * header, its extension headers at their bound and a TCP header. */
#define HEADERS_NEEDED6 (sizeof(struct ethhdr) + GUE6_LEN_MAX + 40 + IPV6_MAX_EXT_BYTES + 60)

struct lpm_v6_key {
	__u32 prefixlen;
	__be32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENT_MAX_VIPS);
	__type(key, struct in6_addr);
	__type(value, struct agent_vip);
} agent_vips6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, AGENT_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v6_key);
	__type(value, __u8);
} trusted_sources6 SEC(".maps");

INLINE int is_local6(const __be32 *a)
{
	return a[0] == local_addr6[0] && a[1] == local_addr6[1] && a[2] == local_addr6[2] && a[3] == local_addr6[3];
}

/* Does the inner IPv6 packet belong to this server (agent_locality.h sock_locality
 * with an IPv6 tuple)? client and vip are the connection's addresses: the
 * packet's, or for a Packet Too Big those of the reply it quotes. */
INLINE enum locality locality6(struct __sk_buff *skb, struct ipv6hdr *ip6, const struct in6_addr *client,
				const struct in6_addr *vip, const struct flow *f, struct tcphdr *tcp)
{
	struct bpf_sock_tuple tuple = {};

	__builtin_memcpy(tuple.ipv6.saddr, client, 16);
	__builtin_memcpy(tuple.ipv6.daddr, vip, 16);
	tuple.ipv6.sport = f->sport;
	tuple.ipv6.dport = f->dport;
	return sock_locality(skb, &tuple, sizeof(tuple.ipv6), ip6, sizeof(*ip6), f, tcp);
}

/* Chains the packet to prev[next] in GUE over IPv6: outer source us,
 * destination the previous owner, hop limit reset, hop = next + 1; the UDP
 * source port (the flow's entropy) stays, the UDP checksum becomes 0
 * (a nonzero one was verified, but no longer covers what changed). */
INLINE int chain6(struct __sk_buff *skb, void *outer, int next)
{
	/* What changes: the IPv6 header, and the private data's first word
	 * (hop); UDP and GUE are copied back as they were. */
	struct {
		struct ipv6hdr ip;
		struct udphdr udp;
		struct guehdr g;
		__u8 type, len, hop, flags;
	} hdr;
	void *data_end = (void *)(long)skb->data_end;

	_Static_assert(sizeof(hdr) == GUE6_LEN_PLAIN + 4, "IPv6 GUE headers are laid out without padding");
	if (next < 0 || next >= BEAMER_MAX_CHAIN || outer + GUE6_LEN_WITH(next + 1) > data_end)
		return drop(AGENT_DROP_CHAIN_FAILED);
	__builtin_memcpy(&hdr, outer, sizeof(hdr));
#pragma unroll
	for (int i = 0; i < 4; i++)
		hdr.ip.saddr.in6_u.u6_addr32[i] = local_addr6[i];
	__builtin_memcpy(&hdr.ip.daddr, outer + GUE6_LEN_OPT + 16 * (next & 7), 16);
	hdr.ip.hop_limit = BEAMER_OUTER_TTL;
	hdr.hop = next + 1;
	hdr.udp.check = 0; /* as the mux sends it: the addresses and hop changed (RFC 6935) */

	/* The IPv6 header, UDP, GUE and the private data's first word (hop). */
	return chain_send(skb, &hdr, sizeof(hdr), IPPROTO_UDP, bpf_ntohs(hdr.ip.payload_len) + sizeof(hdr.ip),
			  hdr.ip.saddr.in6_u.u6_addr32, hdr.ip.daddr.in6_u.u6_addr32, 1);
}

/* The IPv6 path: a program of its own, tail-called by beamer_agent for
 * IPv6 frames (agent6_prog), so the IPv4 path and its stack are as before. */
SEC("tc")
int beamer_agent6(struct __sk_buff *skb)
{
	__u32 want = skb->len < HEADERS_NEEDED6 ? skb->len : HEADERS_NEEDED6;
	if ((long)skb->data_end - (long)skb->data < (long)want)
		bpf_skb_pull_data(skb, want);

	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ipv6hdr *outer = l3_after_eth(data, data_end, 1);
	struct udphdr *udp = (void *)(outer + 1);

	if (!outer || outer->nexthdr != IPPROTO_UDP || (void *)(udp + 1) > data_end) {
		agent_count(AGENT_PASS_NOT_ENCAP);
		return TC_ACT_OK;
	}
	__u32 port = bpf_ntohs(udp->dest);
	__u8 *on = bpf_map_lookup_elem(&gue_ports, &port);
	if (!on || !*on) {
		agent_count(AGENT_PASS_NOT_ENCAP);
		return TC_ACT_OK;
	}
	if (!is_local6(outer->daddr.in6_u.u6_addr32)) {
		agent_count(AGENT_PASS_NOT_FOR_US);
		return TC_ACT_OK;
	}

	/* GUE over IPv6 for us: from here on kept, chained, or dropped. */
	capture_skb6(skb, CAPTURE_AGENT_RX);
	struct lpm_v6_key src = {.prefixlen = 128};
	__builtin_memcpy(src.addr, &outer->saddr, 16);
	if (!bpf_map_lookup_elem(&trusted_sources6, &src))
		return drop(AGENT_DROP_UNTRUSTED);
	if (outer->version != 6)
		return drop(AGENT_DROP_BAD_HEADER);
	__u32 avail = skb->len - sizeof(struct ethhdr);
	__u32 outer_tot = bpf_ntohs(outer->payload_len) + sizeof(*outer);
	if (outer_tot > avail)
		return drop(AGENT_DROP_TRUNCATED);
	if (bpf_ntohs(udp->len) != outer_tot - sizeof(*outer))
		return drop(AGENT_DROP_BAD_HEADER);
	if (udp->check) {
		/* Rare (muxes and agents send 0): verified over the whole
		 * packet, pulled in, so the headers move (issue 23). */
		if (!gue_udp_csum_ok(skb, 1))
			return drop(AGENT_DROP_BAD_UDP_CHECKSUM);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		outer = l3_after_eth(data, data_end, 1);
		if (!outer)
			return drop(AGENT_DROP_TRUNCATED);
		udp = (void *)(outer + 1);
		if ((void *)(udp + 1) > data_end)
			return drop(AGENT_DROP_TRUNCATED);
	}
	struct guehdr *g = (void *)(udp + 1);
	if ((void *)(g + 1) > data_end)
		return drop(AGENT_DROP_TRUNCATED);

	struct beamer_opt6 *opt = NULL;
	int n = 0, outer_len = GUE6_LEN_PLAIN;
	if (g->hlen & GUE_HLEN_MASK) {
		/* The fixed private data; each previous owner is checked
		 * against the packet where it is read (a minimal packet is
		 * shorter than the longest outer headers). */
		if ((void *)outer + GUE6_LEN_OPT > data_end)
			return drop(AGENT_DROP_TRUNCATED);
		int priv = gue_check(g, GUE_PROTO_IPV6, 16, &n);
		if (priv < BEAMER_OPT_FIXED || priv > BEAMER_OPT6_MAX)
			return drop(AGENT_DROP_BAD_OPTION);
		outer_len = GUE6_LEN_PLAIN + priv;
		opt = (void *)(g + 1);
		if ((void *)outer + outer_len > data_end)
			return drop(AGENT_DROP_TRUNCATED);
	} else if (g->hlen || g->proto != GUE_PROTO_IPV6 || g->flags) {
		return drop(AGENT_DROP_BAD_OPTION);
	}
	if (outer_tot < (__u32)outer_len)
		return drop(AGENT_DROP_BAD_HEADER);
	struct ipv6hdr *ip6 = (void *)outer + (outer_len & 0xff);
	if ((void *)(ip6 + 1) > data_end)
		return drop(AGENT_DROP_TRUNCATED);

	struct tcphdr *tcp = NULL;
	struct flow f = {};
	int pv = parse_flow(ip6, data_end, outer_tot - outer_len, &f, &tcp, 1);
	struct in6_addr *client = &ip6->saddr, *vaddr = &ip6->daddr;
	if (pv == PARSE_ICMP) {
		/* A Packet Too Big is decided as the connection it quotes. */
		struct ipv6hdr *quote;
		if (icmp_classify(ip6, data_end, f.l4_off, &f, (void **)&quote, 1) != ICMP_KIND_TOO_BIG)
			return drop(AGENT_DROP_ICMP);
		agent_count(AGENT_ICMP_FRAG_NEEDED);
		client = &quote->daddr;
		vaddr = &quote->saddr;
		pv = PARSE_OK;
	}
	switch (pv) {
	case PARSE_OK:
		break;
	case PARSE_TRUNCATED:
		return drop(AGENT_DROP_TRUNCATED);
	case PARSE_BAD_HEADER:
		return drop(AGENT_DROP_BAD_HEADER);
	case PARSE_FRAGMENT:
		return drop(AGENT_DROP_FRAGMENT);
	case PARSE_EXT_CHAIN:
		return drop(AGENT_DROP_EXT_HEADERS);
	default:
		return drop(AGENT_DROP_NOT_TCP);
	}
	struct agent_vip *vip = bpf_map_lookup_elem(&agent_vips6, &ip6->daddr);
	if (!vip)
		return drop(AGENT_DROP_UNKNOWN_VIP);

	if (tcp && flow_is_syn(&f))
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_SYN, 1);
	if (!opt)
		return decap_to_stack(skb, outer_len, AGENT_STACK_NO_OPTION, 1);

	/* The newest (incarnation, generation), as for IPv4 (agent_epoch.h). */
	__u32 now = 0;
	int is_newest = remember_epoch(vip, opt->incarnation, opt->generation, &now);
	if (is_newest < 0)
		return drop(AGENT_DROP_UNKNOWN_VIP);

	int next = -1;
	__u8 hop = opt->hop;
	if (vip->window && hop < n) {
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
			if (next < 0 && i >= hop && i < n) {
				if ((void *)opt->prev[i] + 16 > data_end)
					return drop(AGENT_DROP_TRUNCATED);
				if (!is_local6(opt->prev[i]))
					next = i;
			}
		}
	}
	int chainable = next >= 0 && window_open(vip, opt->changed, &f, &now);
	if (!chainable && is_newest)
		return decap_to_stack(skb, outer_len, AGENT_TO_STACK, 1);

	switch (locality6(skb, ip6, client, vaddr, &f, tcp)) {
	case LOCAL_SOCKET:
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_SOCKET, 1);
	case LOCAL_COOKIE:
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_COOKIE, 1);
	default:
		break;
	}
	if (chainable) {
		/* The relay rule (agent.c owner_trusted), for IPv6. */
		struct lpm_v6_key owner = {.prefixlen = 128};
		if (next < 0 || next >= BEAMER_MAX_CHAIN || (void *)opt->prev[next] + 16 > data_end)
			return drop(AGENT_DROP_CHAIN_FAILED);
		__builtin_memcpy(owner.addr, opt->prev[next], 16);
		if (!bpf_map_lookup_elem(&trusted_sources6, &owner))
			return drop(AGENT_DROP_UNTRUSTED_OWNER);
		return chain6(skb, outer, next);
	}
	return drop(AGENT_DROP_STALE_GENERATION);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct __sk_buff *));
} agent6_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_agent6},
};

/* IPv6 frames go to beamer_agent6; should the tail call fail, they go on
 * to the stack untouched, as any frame that is not ours. */
INLINE int agent_ipv6(struct __sk_buff *skb)
{
	bpf_tail_call(skb, &agent6_prog, 0);
	agent_count(AGENT_PASS_NOT_ENCAP);
	return TC_ACT_OK;
}

#endif
