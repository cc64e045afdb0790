/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's XDP fast path for GUE over IPv6 (agent_xdp.h's rules, for
 * agent6.h's packets): a program of its own, tail-called by
 * beamer_agent_xdp for frames that are not IPv4. It decapsulates only what
 * the tc program would keep for the stack with the same state — a TCP SYN,
 * a packet without private data, or a packet from a mux at exactly the
 * newest (incarnation, generation) whose private data names no previous
 * owner that could take it — after every check of the tc path passed;
 * everything else goes on untouched (XDP_PASS) to the tc program, which
 * decides and counts it. It changes no state but its counters.
 */
#ifndef BEAMER_AGENT6_XDP_H
#define BEAMER_AGENT6_XDP_H

#include "defs.h"
#include "parse.h"
#include "flow.h"
#include "gue.h"
#include "gue_agent.h"
#include "agent_maps.h"
#include "agent_config.h"
#include "capture.h"
#include "agent6.h"
#include "agent_epoch.h"
#include "agent_decap_xdp.h"

SEC("xdp")
int beamer_agent6_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *outer = l3_after_eth(data, data_end, 1);
	struct udphdr *udp = outer ? (void *)(outer + 1) : NULL;

	if (!outer || outer->nexthdr != IPPROTO_UDP || (void *)(udp + 1) > data_end ||
	    !is_local6(outer->daddr.in6_u.u6_addr32))
		return XDP_PASS;
	__u32 port = bpf_ntohs(udp->dest);
	__u8 *on = bpf_map_lookup_elem(&gue_ports, &port);
	if (!on || !*on)
		return XDP_PASS;
	struct lpm_v6_key src = {.prefixlen = 128};
	__builtin_memcpy(src.addr, &outer->saddr, 16);
	if (!bpf_map_lookup_elem(&trusted_sources6, &src))
		return XDP_PASS;
	/* The tc path's checks, in its order; any failure is its to count. */
	__u32 outer_tot = bpf_ntohs(outer->payload_len) + sizeof(*outer);
	if (outer->version != 6 || (void *)outer + outer_tot > data_end ||
	    bpf_ntohs(udp->len) != outer_tot - sizeof(*outer))
		return XDP_PASS;
	if (udp->check)
		return XDP_PASS; /* verified over the whole packet in tc */
	struct guehdr *g = (void *)(udp + 1);
	if ((void *)outer + GUE6_LEN_OPT > data_end)
		return XDP_PASS; /* shorter than any TCP packet worth decapsulating */
	struct beamer_opt6 *opt = NULL;
	int n = 0, outer_len = GUE6_LEN_PLAIN;
	if (g->hlen & GUE_HLEN_MASK) {
		int priv = gue_check(g, GUE_PROTO_IPV6, 16, &n);
		if (priv < BEAMER_OPT_FIXED || priv > BEAMER_OPT6_MAX)
			return XDP_PASS;
		outer_len = GUE6_LEN_PLAIN + priv;
		opt = (void *)(g + 1);
	} else if (g->hlen || g->proto != GUE_PROTO_IPV6 || g->flags) {
		return XDP_PASS;
	}
	if (outer_tot < (__u32)outer_len || (void *)outer + outer_len > data_end)
		return XDP_PASS;
	struct ipv6hdr *ip6 = (void *)outer + (outer_len & 0xff);
	if ((void *)(ip6 + 1) > data_end)
		return XDP_PASS;
	struct tcphdr *tcp = NULL;
	struct flow f = {};
	if (parse_flow(ip6, data_end, outer_tot - outer_len, &f, &tcp, 1) != PARSE_OK || !tcp)
		return XDP_PASS;
	struct agent_vip *vip = bpf_map_lookup_elem(&agent_vips6, &ip6->daddr);
	if (!vip)
		return XDP_PASS;

	if (flow_is_syn(&f))
		return xdp_decap(ctx, outer_len, AGENT_LOCAL_SYN, 0, 1);
	if (!opt)
		return xdp_decap(ctx, outer_len, AGENT_STACK_NO_OPTION, 0, 1);

	/* Exactly the newest remembered: nothing to remember, not stale. */
	if (!at_newest_epoch(vip, opt->incarnation, opt->generation))
		return XDP_PASS;
	/* A previous owner that could take it: the tc path decides. */
	__u8 hop = opt->hop;
	if (vip->window && hop < n) {
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
			if (i >= hop && i < n) {
				if ((void *)opt->prev[i] + 16 > data_end || !is_local6(opt->prev[i]))
					return XDP_PASS;
			}
		}
	}
	return xdp_decap(ctx, outer_len, AGENT_TO_STACK, 0, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct xdp_md *));
} agent6_xdp_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_agent6_xdp},
};

/* Frames that are not IPv4 go to beamer_agent6_xdp; should the tail call
 * fail, they go on to the tc program untouched. */
INLINE int agent_xdp_not_ipv4(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &agent6_xdp_prog, 0);
	return XDP_PASS;
}

#endif
