/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The outer headers the agent accepts, one reader per family, written once
 * for both hooks over agent_ctx.h: IP-in-IP or GUE over IPv4 (outer4), GUE
 * over IPv6 (outer6, private data struct beamer_opt6 with 16-byte previous
 * owners). Each checks, in order, what the packet must be before anything
 * in it is believed — encapsulated, for us, from a trusted sender, the
 * outer header's checksum (IPv4), lengths, fragments, the option — and
 * fills a struct outer_frame for agent.c's agent_path, which does the rest
 * for both families. Outer IPv6 extension headers are never sent by a mux
 * or agent and are not accepted.
 *
 * The XDP fast path takes the same checks (any failure passes the packet
 * to tc, which counts it), and two more: a GUE UDP checksum that is not 0
 * (verified over the whole packet in tc) and a packet too short to hold
 * the longest outer headers (no TCP packet worth decapsulating is).
 */
#ifndef BEAMER_AGENT_OUTER_H
#define BEAMER_AGENT_OUTER_H

#include "defs.h"
#include "parse.h"
#include "wire.h"
#include "gue.h"
#include "gue_agent.h"
#include "agent_csum.h"
#include "agent_maps.h"
#include "agent_config.h"
#include "agent_ctx.h"
#include "agent6.h"

/* Enough linear data for Ethernet, the longest outer headers (GUE's), the
 * inner IPv4 header and a TCP header with options. */
#define HEADERS_NEEDED (sizeof(struct ethhdr) + GUE4_LEN_MAX + sizeof(struct iphdr) + 60)

/* Linear data for Ethernet, the longest IPv6 GUE headers, the inner IPv6
 * header, its extension headers at their bound and a TCP header. */
#define HEADERS_NEEDED6 (sizeof(struct ethhdr) + GUE6_LEN_MAX + 40 + IPV6_MAX_EXT_BYTES + 60)

/* What the outer headers told: where the inner packet starts and what the
 * option (GUE's private data) says. The option's first 16 bytes are laid
 * out alike in both families (struct beamer_opt, struct beamer_opt6). */
struct outer_frame {
	void *data_end;
	void *outer;            /* the outer IP header */
	struct beamer_opt *opt; /* NULL: none (a packet addressed by server id) */
	__u32 tot;              /* the outer IP packet's length */
	int len;                /* the outer headers' length, stripped on decapsulation */
	int n;                  /* previous owners the option names */
	int gue;                /* IPv4: it came in GUE (IPv6 always does) */
};

/* IP-in-IP or GUE over IPv4. Returns the packet's fate (pass, drop), or -1
 * with o filled when the inner packet is to be looked at. */
INLINE int outer4(void *ctx, const int hook, struct outer_frame *o)
{
	if (hook == AGENT_TC) {
		struct __sk_buff *skb = ctx;
		if (skb->len > HEADERS_NEEDED && (long)skb->data_end - (long)skb->data < (long)HEADERS_NEEDED)
			bpf_skb_pull_data(skb, HEADERS_NEEDED);
	}
	void *data = ctx_data(ctx, hook);
	void *data_end = ctx_data_end(ctx, hook);
	struct iphdr *outer = l3_after_eth(data, data_end, 0);
	struct udphdr *udp = NULL; /* GUE: its UDP header (gue_agent.h) */

	if (outer && outer->protocol == IPPROTO_UDP)
		udp = gue4_udp(outer, data_end);
	if (!outer || (outer->protocol != IPPROTO_IPIP && !udp))
		return ctx_pass(hook, AGENT_PASS_NOT_ENCAP);
	if (outer->daddr != local_addr)
		return ctx_pass(hook, AGENT_PASS_NOT_FOR_US);

	/* Encapsulated for us: from here on kept, chained, or dropped. */
	ctx_capture_rx(ctx, hook, 0);
	if (!ipv4_trusted(outer->saddr))
		return ctx_drop(hook, AGENT_DROP_UNTRUSTED);

	/* Before any field of it is believed (issue 23): a corrupted
	 * previous owner must not become a valid packet to a wrong address. */
	if (outer_csum_wrong(outer, data_end))
		return ctx_drop(hook, AGENT_DROP_BAD_CHECKSUM);
	__u32 avail = ctx_len(ctx, hook) - sizeof(struct ethhdr);
	if (outer->version != 4)
		return ctx_drop(hook, AGENT_DROP_BAD_HEADER);
	if (outer->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return ctx_drop(hook, AGENT_DROP_FRAGMENT);
	__u16 outer_tot = bpf_ntohs(outer->tot_len);
	if (outer_tot > avail)
		return ctx_drop(hook, AGENT_DROP_TRUNCATED);
	if (hook == AGENT_XDP && ((udp && udp->check) || (void *)outer + OUTER_LEN_MAX > data_end))
		return XDP_PASS;

	struct beamer_opt *opt = NULL;
	int outer_len = outer->ihl * 4;
	int n = 0; /* previous owners in the option */
	if (udp) {
		/* GUE: the private data is the option (gue.h). */
		outer_len = gue4_parse(outer, udp, data_end, outer_tot);
		if (outer_len == -GUE_TRUNCATED)
			return ctx_drop(hook, AGENT_DROP_TRUNCATED);
		if (outer_len == -GUE_BAD_HEADER)
			return ctx_drop(hook, AGENT_DROP_BAD_HEADER);
		if (outer_len < GUE4_LEN_PLAIN || outer_len > GUE4_LEN_MAX)
			return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
		if (hook == AGENT_TC && udp->check) {
			/* Rare (muxes and agents send 0): verified over the
			 * whole packet, pulled in, so the headers move. */
			if (!gue_udp_csum_ok(ctx, 0))
				return drop(AGENT_DROP_BAD_UDP_CHECKSUM);
			data = ctx_data(ctx, hook);
			data_end = ctx_data_end(ctx, hook);
			outer = l3_after_eth(data, data_end, 0);
			if (!outer)
				return drop(AGENT_DROP_TRUNCATED);
		}
		if (outer_len > GUE4_LEN_PLAIN) {
			opt = (void *)outer + GUE4_LEN_PLAIN;
			if ((void *)(opt + 1) > data_end)
				return ctx_drop(hook, AGENT_DROP_TRUNCATED);
			n = (outer_len - GUE4_LEN_OPT) >> 2;
		}
		if (hook == AGENT_TC)
			agent_count(AGENT_GUE); /* XDP counts it when it decapsulates */
	} else if (outer_len > OUTER_LEN_PLAIN) {
		/* Valid packets hold the inner IPv4 and TCP headers after the
		 * outer one, so OUTER_LEN_MAX bytes are there whatever n is. */
		opt = (void *)(outer + 1);
		if ((void *)(opt + 1) > data_end)
			return ctx_drop(hook, AGENT_DROP_TRUNCATED);
		if (outer_len < OUTER_LEN_OPT || opt->type != BEAMER_OPT_TYPE || opt->len != outer_len - OUTER_LEN_PLAIN)
			return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
		n = (outer_len - OUTER_LEN_OPT) >> 2;
		if (opt->hop > n)
			return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
	} else if (outer_len != OUTER_LEN_PLAIN) {
		return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
	}
	if (outer_len > GUE4_LEN_MAX)
		return ctx_drop(hook, AGENT_DROP_BAD_OPTION); /* cannot happen: IHL is 4 bits, GUE's checked */
	o->data_end = data_end;
	o->outer = outer;
	o->opt = opt;
	o->tot = outer_tot;
	o->len = outer_len;
	o->n = n;
	o->gue = udp != NULL;
	return -1;
}

/* GUE over IPv6, as outer4. */
INLINE int outer6(void *ctx, const int hook, struct outer_frame *o)
{
	if (hook == AGENT_TC) {
		struct __sk_buff *skb = ctx;
		__u32 want = skb->len < HEADERS_NEEDED6 ? skb->len : HEADERS_NEEDED6;
		if ((long)skb->data_end - (long)skb->data < (long)want)
			bpf_skb_pull_data(skb, want);
	}
	void *data = ctx_data(ctx, hook);
	void *data_end = ctx_data_end(ctx, hook);
	struct ipv6hdr *outer = l3_after_eth(data, data_end, 1);
	struct udphdr *udp = (void *)(outer + 1);

	if (!outer || outer->nexthdr != IPPROTO_UDP || (void *)(udp + 1) > data_end)
		return ctx_pass(hook, AGENT_PASS_NOT_ENCAP);
	__u32 port = bpf_ntohs(udp->dest);
	__u8 *on = bpf_map_lookup_elem(&gue_ports, &port);
	if (!on || !*on)
		return ctx_pass(hook, AGENT_PASS_NOT_ENCAP);
	if (!is_local6(outer->daddr.in6_u.u6_addr32))
		return ctx_pass(hook, AGENT_PASS_NOT_FOR_US);

	/* GUE over IPv6 for us: from here on kept, chained, or dropped. */
	ctx_capture_rx(ctx, hook, 1);
	if (!ipv6_trusted(outer->saddr.in6_u.u6_addr32))
		return ctx_drop(hook, AGENT_DROP_UNTRUSTED);
	if (outer->version != 6)
		return ctx_drop(hook, AGENT_DROP_BAD_HEADER);
	__u32 avail = ctx_len(ctx, hook) - sizeof(struct ethhdr);
	__u32 outer_tot = bpf_ntohs(outer->payload_len) + sizeof(*outer);
	if (outer_tot > avail)
		return ctx_drop(hook, AGENT_DROP_TRUNCATED);
	if (bpf_ntohs(udp->len) != outer_tot - sizeof(*outer))
		return ctx_drop(hook, AGENT_DROP_BAD_HEADER);
	if (udp->check) {
		if (hook == AGENT_XDP)
			return XDP_PASS; /* verified over the whole packet in tc */
		/* Rare (muxes and agents send 0): verified over the whole
		 * packet, pulled in, so the headers move (issue 23). */
		if (!gue_udp_csum_ok(ctx, 1))
			return drop(AGENT_DROP_BAD_UDP_CHECKSUM);
		data = ctx_data(ctx, hook);
		data_end = ctx_data_end(ctx, hook);
		outer = l3_after_eth(data, data_end, 1);
		if (!outer)
			return drop(AGENT_DROP_TRUNCATED);
		udp = (void *)(outer + 1);
		if ((void *)(udp + 1) > data_end)
			return drop(AGENT_DROP_TRUNCATED);
	}
	struct guehdr *g = (void *)(udp + 1);
	if ((void *)(g + 1) > data_end)
		return ctx_drop(hook, AGENT_DROP_TRUNCATED);
	if (hook == AGENT_XDP && (void *)outer + GUE6_LEN_OPT > data_end)
		return XDP_PASS; /* shorter than any TCP packet worth decapsulating */

	struct beamer_opt *opt = NULL;
	int n = 0, outer_len = GUE6_LEN_PLAIN;
	if (g->hlen & GUE_HLEN_MASK) {
		/* The fixed private data; each previous owner is checked
		 * against the packet where it is read (a minimal packet is
		 * shorter than the longest outer headers). */
		if ((void *)outer + GUE6_LEN_OPT > data_end)
			return ctx_drop(hook, AGENT_DROP_TRUNCATED);
		int priv = gue_check(g, GUE_PROTO_IPV6, 16, &n);
		if (priv < BEAMER_OPT_FIXED || priv > BEAMER_OPT6_MAX)
			return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
		outer_len = GUE6_LEN_PLAIN + priv;
		opt = (void *)(g + 1);
		if ((void *)outer + outer_len > data_end)
			return ctx_drop(hook, AGENT_DROP_TRUNCATED);
	} else if (g->hlen || g->proto != GUE_PROTO_IPV6 || g->flags) {
		return ctx_drop(hook, AGENT_DROP_BAD_OPTION);
	}
	if (outer_tot < (__u32)outer_len)
		return ctx_drop(hook, AGENT_DROP_BAD_HEADER);
	o->data_end = data_end;
	o->outer = outer;
	o->opt = opt;
	o->tot = outer_tot;
	o->len = outer_len & 0xff; /* at most GUE6_LEN_MAX: tells the verifier */
	o->n = n;
	o->gue = 0;
	return -1;
}

#endif
