/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's XDP fast path hands a packet to the stack by stripping its
 * outer headers here, for both families (agent_xdp.h, agent6_xdp.h).
 */
#ifndef BEAMER_AGENT_DECAP_XDP_H
#define BEAMER_AGENT_DECAP_XDP_H

#include "defs.h"
#include "wire.h"
#include "gue.h"
#include "agent_maps.h"
#include "capture.h"

/* Strips the outer header, of either family (is_ipv6 a constant at each
 * call): the Ethernet header moves forward over it. The counters are
 * written through one lookup; gue counts AGENT_GUE (the IPv4 path's GUE
 * packets), is_ipv6 AGENT_IPV6. */
INLINE int xdp_decap(struct xdp_md *ctx, int outer_len, enum agent_counter why, int gue, const int is_ipv6)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS; /* checked by the caller; keeps the verifier sure */
	if (is_ipv6 && (outer_len < GUE6_LEN_PLAIN || outer_len > GUE6_LEN_MAX))
		return XDP_PASS;
	if (!is_ipv6 && (outer_len < OUTER_LEN_PLAIN || outer_len > GUE4_LEN_MAX))
		return XDP_PASS;
	struct ethhdr copy = *eth;
	if (is_ipv6)
		capture_xdp6(ctx, CAPTURE_AGENT_XDP_RX);
	else
		capture_xdp(ctx, CAPTURE_AGENT_XDP_RX);
	if (bpf_xdp_adjust_head(ctx, outer_len))
		return XDP_PASS; /* tc decapsulates it instead */
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP; /* cannot happen: the inner headers were there */
	*eth = copy;
	if (is_ipv6)
		capture_xdp6(ctx, CAPTURE_AGENT_XDP_UP);
	else
		capture_xdp(ctx, CAPTURE_AGENT_XDP_UP);
	__u32 zero = 0;
	__u64 *c = bpf_map_lookup_elem(&agent_counters, &zero);
	if (c && why < AGENT_COUNTER_MAX) {
		c[why] += 1;
		c[AGENT_XDP_DECAP] += 1;
		if (gue)
			c[AGENT_GUE] += 1;
		if (is_ipv6)
			c[AGENT_IPV6] += 1;
	}
	return XDP_PASS;
}

#endif
