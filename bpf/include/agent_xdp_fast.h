/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The XDP fast path's most common packet read in few instructions (issue
 * 27): a TCP segment from a mux in IP-in-IP with the 16-byte option naming
 * no previous owner (a bucket that has not moved), inner IPv4 without
 * options. Measured per packet, the agent's cost in XDP is the count of
 * instructions it runs (a straight line of 200 dependent ALU instructions
 * added to the strip floor costs it ~48 ns; touching every map and data
 * section the agent reads costs it 1-3 ns), and the general path
 * (agent_outer.h outer4, parse.h parse_flow, agent.c agent_path) reads
 * every shape of header it accepts, field by field, keeping its facts on
 * the stack. This reads the one shape whole: the headers are checked
 * against it by a few word compares, each check of the general path that
 * this shape reaches is made here too, with the same helpers where there
 * are some (ipv4_trusted, agent_vip_of, csum_words_wrong,
 * at_newest_epoch, xdp_decap's parts), and what the general path would do with
 * the packet is done:
 *
 *   decapsulated (counted local_syn or to_stack, and xdp_decap), when
 *   every check holds: the general path's verdict for this shape, since
 *   an option naming no previous owner leaves nothing to chain;
 *   XDP_PASS when the packet is not at the newest (incarnation,
 *   generation): the general path's verdict too;
 *   -1 otherwise (another shape, or any check failing): the general path
 *   decides, from the start, and passes to tc whatever it does not
 *   decapsulate itself.
 *
 * So this shortcut changes no verdict (TestAgentXDPFastShape runs every
 * agent vector with it on and off), and it changes no state: as the
 * general XDP path, it writes only counters.
 */
#ifndef BEAMER_AGENT_XDP_FAST_H
#define BEAMER_AGENT_XDP_FAST_H

#include "defs.h"
#include "wire.h"
#include "agent_words.h"
#include "agent_csum.h"
#include "capture.h"
#include "agent_maps.h"
#include "agent_config.h"
#include "agent_epoch.h"
#include "agent_ctx.h"
/* and cheetah_agent.h (cheetah_vips), included before by agent.c */

/* Off only in tests (pkg/dataplane TestAgentXDPFastShape), to compare the
 * verdicts with and without it. */
volatile const __u32 xdp_fast_shape = 1;

/* Ethernet, the outer IPv4 header with the option, inner IPv4, TCP. */
#define XDP_FAST_LEN (sizeof(struct ethhdr) + OUTER_LEN_OPT + sizeof(struct iphdr) + sizeof(struct tcphdr))

/* The option's first word as an LE load sees it: type, length 16, hop 0
 * (its flags byte is not checked by the general path for IP-in-IP). */
#define XDP_FAST_OPT_HEAD (BEAMER_OPT_TYPE | BEAMER_OPT_FIXED << 8)

/*
 * The shape's fixed bytes, read as little-endian words (the masks keep
 * the bytes checked, the values are what they must hold):
 *   data + 12, 8 bytes (EtherType, outer version/IHL, TOS, total length,
 *     id): EtherType IPv4, version 4 and IHL 9; the total length is taken
 *     from the same word;
 *   data + 20, 4 bytes (outer fragment word, TTL, protocol): MF and
 *     offset 0, IP-in-IP;
 *   data + 52, 8 bytes (inner total length, id, fragment word, TTL,
 *     protocol): MF and offset 0, TCP; the inner total length is taken
 *     from it.
 * The inner version/IHL byte (data + 50) is compared on its own.
 */
#define XDP_FAST_HEAD_MASK 0xffffffULL
#define XDP_FAST_HEAD (0x0008 | 0x49 << 16)
#define XDP_FAST_FRAG_MASK 0xff00ff3fU
#define XDP_FAST_FRAG ((__u32)IPPROTO_IPIP << 24)
#define XDP_FAST_INNER_MASK 0xff00ff3f00000000ULL
#define XDP_FAST_INNER ((__u64)IPPROTO_TCP << 56)

/* Is the 36-byte outer header's checksum wrong (outer4's question, for
 * IHL 9)? The caller has checked the 36 bytes are in the packet. */
INLINE int fast_outer_csum_wrong(const void *outer)
{
	const pkt_u32 *w = outer;
	__u64 sum = 0;

#pragma unroll
	for (int i = 0; i < 9; i++)
		sum += w[i];
	return csum_words_wrong(sum);
}

/* xdp_decap of the fast shape, from its Ethernet header (data, checked
 * by the caller): its MAC addresses are read here, capture_on once (when
 * it is on, xdp_decap with its capture points does all of it). */
INLINE int xdp_fast_decap(struct xdp_md *ctx, void *data, enum agent_counter why)
{
	if (capture_on)
		return xdp_decap(ctx, OUTER_LEN_OPT, why, 0, 0);
	int stripped = xdp_strip_outer_macs(ctx, OUTER_LEN_OPT, bpf_htons(ETH_P_IP), pkt_load64(data), pkt_load32(data + 8));
	if (stripped > 0)
		return XDP_PASS; /* tc decapsulates it instead */
	if (stripped < 0)
		return XDP_DROP; /* cannot happen: the inner headers were there */
	xdp_count_decap(why, 0, 0);
	return XDP_PASS;
}

INLINE int xdp_fast4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (!xdp_fast_shape || data + XDP_FAST_LEN > data_end)
		return -1;
	struct iphdr *outer = data + sizeof(struct ethhdr);
	struct beamer_opt *opt = (void *)(outer + 1);
	struct iphdr *ip = (void *)opt + BEAMER_OPT_FIXED;
	struct tcphdr *tcp = (void *)(ip + 1);
	__u64 head = pkt_load64(data + 12), inner = pkt_load64(&ip->tot_len);

	/* The shape: IPv4 in Ethernet, outer version 4 and IHL 9, IP-in-IP,
	 * the option naming no previous owner at hop 0, inner version 4 and
	 * IHL 5, TCP; neither header a fragment (outer4, check_ipv4_plain). */
	if ((head & XDP_FAST_HEAD_MASK) != XDP_FAST_HEAD || (pkt_load32(&outer->frag_off) & XDP_FAST_FRAG_MASK) != XDP_FAST_FRAG ||
	    (pkt_load32(opt) & 0xffffff) != XDP_FAST_OPT_HEAD || *(__u8 *)ip != 0x45 ||
	    (inner & XDP_FAST_INNER_MASK) != XDP_FAST_INNER)
		return -1;
	/* For us, from a trusted sender, its checksum right (outer4). */
	if (outer->daddr != local_addr || !ipv4_trusted(outer->saddr) || fast_outer_csum_wrong(outer))
		return -1;
	/* Lengths: the outer packet within what arrived (outer4), the inner
	 * within the outer after its 36 bytes (outer4, agent_path: so the
	 * outer holds them too), the TCP header with its options within the
	 * inner (parse_l4; and so the inner holds its 20 bytes,
	 * check_ipv4_plain). */
	__u32 outer_tot = bpf_ntohs((__u16)(head >> 32)), tot = bpf_ntohs((__u16)inner);
	__u32 doff = tcp->doff;
	if (outer_tot + sizeof(struct ethhdr) > (__u32)(data_end - data) || tot + OUTER_LEN_OPT > outer_tot || doff < 5 ||
	    sizeof(struct iphdr) + doff * 4 > tot)
		return -1;
	/* A VIP of ours, not Cheetah's (agent_path). */
	const struct agent_vip *vip = agent_vip_of(ip->daddr);
	if (!vip || (cheetah_vips_in_use && bpf_map_lookup_elem(&cheetah_vips, &ip->daddr)))
		return -1;
	/* A connection request is this server's; anything else at the
	 * newest (incarnation, generation) goes to the stack, nothing being
	 * chainable (agent_path). */
	__u8 flags = ((__u8 *)tcp)[13];
	if ((flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN)
		return xdp_fast_decap(ctx, data, AGENT_LOCAL_SYN);
	if (!at_newest_epoch(vip, opt))
		return XDP_PASS;
	return xdp_fast_decap(ctx, data, AGENT_TO_STACK);
}

#endif
