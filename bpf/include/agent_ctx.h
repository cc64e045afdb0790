/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's two hooks behind one small context, so that its decision is
 * written once (agent.c agent_path) and compiled for both: the tc program
 * on ingress, which decides everything, and the XDP fast path in front of
 * it, which decapsulates only the common case and leaves the rest to tc.
 * hook is a constant at each call (AGENT_TC, AGENT_XDP): each program is
 * compiled as if the other hook did not exist, and ctx is the hook's own
 * context (struct __sk_buff or struct xdp_md).
 *
 *   ctx_data, ctx_data_end, ctx_len   the packet, and its whole length (in
 *                                     tc part of it may lie beyond the
 *                                     linear data)
 *   ctx_pass(why)                     not ours: tc counts it and lets it
 *                                     go on; XDP lets it go on to tc
 *   ctx_drop(why)                     tc counts and drops; XDP passes the
 *                                     packet to tc, which decides and
 *                                     counts it again — the fast path never
 *                                     drops (or counts) what tc would
 *   ctx_capture_rx                    tc's capture point on taking a packet
 *   ctx_decap                         strip the outer headers and hand the
 *                                     inner packet to the stack:
 *                                     bpf_skb_adjust_room in tc
 *                                     (decap_to_stack), the Ethernet header
 *                                     moved forward in XDP (xdp_decap)
 */
#ifndef BEAMER_AGENT_CTX_H
#define BEAMER_AGENT_CTX_H

#include "defs.h"
#include "gue.h"
#include "wire.h"
#include "agent_maps.h"
#include "agent_verdict.h"
#include "agent_send.h"
#include "capture.h"
#include "agent_words.h"

#define AGENT_TC 0
#define AGENT_XDP 1

INLINE void *ctx_data(void *ctx, const int hook)
{
	if (hook == AGENT_XDP)
		return (void *)(long)((struct xdp_md *)ctx)->data;
	return (void *)(long)((struct __sk_buff *)ctx)->data;
}

INLINE void *ctx_data_end(void *ctx, const int hook)
{
	if (hook == AGENT_XDP)
		return (void *)(long)((struct xdp_md *)ctx)->data_end;
	return (void *)(long)((struct __sk_buff *)ctx)->data_end;
}

/* The packet's length from the Ethernet header on. */
INLINE __u32 ctx_len(void *ctx, const int hook)
{
	if (hook == AGENT_XDP)
		return ((struct xdp_md *)ctx)->data_end - ((struct xdp_md *)ctx)->data;
	return ((struct __sk_buff *)ctx)->len;
}

INLINE int ctx_pass(const int hook, enum agent_counter why)
{
	if (hook == AGENT_XDP)
		return XDP_PASS;
	agent_count(why);
	return TC_ACT_OK;
}

INLINE int ctx_drop(const int hook, enum agent_counter why)
{
	if (hook == AGENT_XDP)
		return XDP_PASS;
	return drop(why);
}

INLINE void ctx_capture_rx(void *ctx, const int hook, const int is_ipv6)
{
	if (hook == AGENT_XDP)
		return; /* xdp_decap captures what it takes */
	if (is_ipv6)
		capture_skb6(ctx, CAPTURE_AGENT_RX);
	else
		capture_skb(ctx, CAPTURE_AGENT_RX);
}

/* Counts a packet decapsulated in XDP, through one lookup: why, xdp_decap,
 * and gue and ipv6 when they hold (xdp_decap). */
INLINE void xdp_count_decap(enum agent_counter why, int gue, const int is_ipv6)
{
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
}

/* Strips the outer header in XDP, of either family: the Ethernet header
 * moves forward over it (agent_words.h xdp_strip_outer). The counters are
 * written through one lookup; gue counts AGENT_GUE (the IPv4 path's GUE
 * packets: tc counts them when it parses them), is_ipv6 AGENT_IPV6. */
INLINE int xdp_decap(struct xdp_md *ctx, int outer_len, enum agent_counter why, int gue, const int is_ipv6)
{
	if (is_ipv6 && (outer_len < GUE6_LEN_PLAIN || outer_len > GUE6_LEN_MAX))
		return XDP_PASS;
	if (!is_ipv6 && (outer_len < OUTER_LEN_PLAIN || outer_len > GUE4_LEN_MAX))
		return XDP_PASS;
	if (is_ipv6)
		capture_xdp6(ctx, CAPTURE_AGENT_XDP_RX);
	else
		capture_xdp(ctx, CAPTURE_AGENT_XDP_RX);
	int stripped = xdp_strip_outer(ctx, outer_len, is_ipv6 ? ETH_P_IPV6_BE : bpf_htons(ETH_P_IP));
	if (stripped > 0)
		return XDP_PASS; /* tc decapsulates it instead */
	if (stripped < 0)
		return XDP_DROP; /* cannot happen: the inner headers were there */
	if (is_ipv6)
		capture_xdp6(ctx, CAPTURE_AGENT_XDP_UP);
	else
		capture_xdp(ctx, CAPTURE_AGENT_XDP_UP);
	xdp_count_decap(why, gue, is_ipv6);
	return XDP_PASS;
}

/* Hands the inner packet to the stack without its outer_len bytes of outer
 * headers, counted why; gue: it came in GUE over IPv4. */
INLINE int ctx_decap(void *ctx, const int hook, int outer_len, enum agent_counter why, int gue, const int is_ipv6)
{
	if (hook == AGENT_XDP)
		return xdp_decap(ctx, outer_len, why, gue, is_ipv6);
	return decap_to_stack(ctx, outer_len, why, is_ipv6);
}

#endif
