/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's fast path in XDP, for servers whose NIC runs XDP natively
 * (pkg/dataplane Agent.AttachXDP; the tc program stays attached behind it).
 *
 * Decapsulating in tc costs bpf_skb_adjust_room on a socket buffer already
 * built; in XDP it is moving the Ethernet header forward by the outer
 * header's length before the kernel builds the buffer. So the common case
 * is decided here, and only it: a packet this XDP program decapsulates is
 * one the tc program would have decapsulated with the same state —
 *
 *   - a SYN (always kept), a packet without the option (kept), or
 *   - a packet from a mux at exactly the newest (incarnation, generation)
 *     this server remembers, whose option names no previous owner that
 *     could take it (no chaining possible, so no socket lookup needed);
 *
 * with every check of the tc path passed (trusted source, outer and inner
 * headers, the outer header's checksum, option, known VIP) and a GUE UDP
 * checksum of 0 (a nonzero one is verified in tc). Everything else — a newer generation (which
 * must be remembered), an older one (socket lookup, maybe a drop), a
 * chainable packet (clock, window, redirect), Cheetah VIPs (their echo is
 * rewritten), other protocols, anything malformed or untrusted — goes on
 * untouched (XDP_PASS) to the tc program, which decides and counts it as
 * before. This path changes no state but its counters, so what the tc path
 * guarantees (daisy chaining, SYN cookies, generation checks) holds
 * unchanged. A packet decapsulated here reaches the tc program as a plain
 * IPv4 packet and is counted there as pass_not_encap too.
 */
#ifndef BEAMER_AGENT_XDP_H
#define BEAMER_AGENT_XDP_H

#include "defs.h"
#include "parse.h"
#include "flow.h"
#include "wire.h"
#include "gue.h"
#include "gue_agent.h"
#include "agent_csum.h"
#include "agent_maps.h"
#include "agent_config.h"
#include "capture.h"
#include "../strategy/cheetah_agent.h"
#include "agent_epoch.h"
#include "agent_decap_xdp.h"
#include "agent6_xdp.h"

/* The IPv4 path of the fast path (beamer_agent_xdp below; the benchmark
 * build measures it alone). */
INLINE int agent_xdp4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *outer = l3_after_eth(data, data_end, 0);
	struct udphdr *udp = NULL; /* GUE: its UDP header (gue_agent.h) */

	if (!outer || outer->daddr != local_addr)
		return XDP_PASS;
	if (outer->protocol == IPPROTO_UDP && !(udp = gue4_udp(outer, data_end)))
		return XDP_PASS;
	if (!udp && outer->protocol != IPPROTO_IPIP)
		return XDP_PASS;
	if (!ipv4_trusted(outer->saddr))
		return XDP_PASS;
	if (outer->version != 4 || (outer->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return XDP_PASS;
	/* A wrong header checksum, or a nonzero UDP checksum (verified over
	 * the whole packet): the tc path drops and counts, or verifies. */
	if (outer_csum_wrong(outer, data_end) || (udp && udp->check))
		return XDP_PASS;
	/* The tc path's checks, in the same order; any failure is its to count. */
	__u16 outer_tot = bpf_ntohs(outer->tot_len);
	if ((void *)outer + outer_tot > data_end)
		return XDP_PASS;
	/* Every packet worth decapsulating holds the longest outer header's
	 * worth of bytes after the outer header's start (inner IPv4 + TCP). */
	if ((void *)outer + OUTER_LEN_MAX > data_end)
		return XDP_PASS;
	struct beamer_opt *opt = NULL;
	int outer_len = outer->ihl * 4;
	int n = 0;
	if (udp) {
		outer_len = gue4_parse(outer, udp, data_end, outer_tot);
		if (outer_len < GUE4_LEN_PLAIN || outer_len > GUE4_LEN_MAX)
			return XDP_PASS;
		if (outer_len > GUE4_LEN_PLAIN) {
			opt = (void *)outer + GUE4_LEN_PLAIN;
			if ((void *)(opt + 1) > data_end)
				return XDP_PASS;
			n = (outer_len - GUE4_LEN_OPT) >> 2;
		}
	} else if (outer_len > OUTER_LEN_PLAIN) {
		opt = (void *)(outer + 1);
		if (outer_len < OUTER_LEN_OPT || outer_len > OUTER_LEN_MAX || opt->type != BEAMER_OPT_TYPE ||
		    opt->len != outer_len - OUTER_LEN_PLAIN)
			return XDP_PASS;
		n = (outer_len - OUTER_LEN_OPT) >> 2;
		if (opt->hop > n)
			return XDP_PASS;
	} else if (outer_len != OUTER_LEN_PLAIN) {
		return XDP_PASS;
	}
	struct iphdr *ip = (void *)outer + outer_len;
	if ((void *)(ip + 1) > data_end || outer_tot < outer_len)
		return XDP_PASS;
	struct tcphdr *tcp = NULL;
	struct flow f = {};
	if (parse_flow(ip, data_end, outer_tot - outer_len, &f, &tcp, 0) != PARSE_OK || !tcp)
		return XDP_PASS;
	const struct agent_vip *vip = agent_vip_of(ip->daddr);
	if (!vip)
		return XDP_PASS;
	if (cheetah_vips_in_use && bpf_map_lookup_elem(&cheetah_vips, &ip->daddr))
		return XDP_PASS; /* the echo is rewritten in tc */

	if (tcp->syn && !tcp->ack)
		return xdp_decap(ctx, outer_len, AGENT_LOCAL_SYN, udp != NULL, 0);
	if (!opt)
		return xdp_decap(ctx, outer_len, AGENT_STACK_NO_OPTION, udp != NULL, 0);

	/* Exactly the newest remembered: nothing to remember, not stale. */
	if (!at_newest_epoch(vip, opt->incarnation, opt->generation))
		return XDP_PASS;
	/* A previous owner that could take it: the tc path decides. */
	if (vip->window && opt->hop < n) {
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++)
			if (i >= opt->hop && i < n && opt->prev[i] != local_addr)
				return XDP_PASS;
	}
	return xdp_decap(ctx, outer_len, AGENT_TO_STACK, udp != NULL, 0);
}

/* IPv4 here; every other frame to the IPv6 twin (agent6_xdp.h) by a tail
 * call, which leaves the IPv4 path's code as it was. */
SEC("xdp")
int beamer_agent_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(struct ethhdr) <= (void *)(long)ctx->data_end &&
	    ((struct ethhdr *)data)->h_proto == bpf_htons(ETH_P_IPV6))
		return agent_xdp_not_ipv4(ctx);
	return agent_xdp4(ctx);
}

#endif
