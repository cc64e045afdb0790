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
 * are some (ipv4_trusted, outer_csum_wrong, agent_vip_of,
 * at_newest_epoch, xdp_decap), and what the general path would do with
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

	/* The shape: IPv4 in Ethernet, outer version 4 and IHL 9, IP-in-IP,
	 * the option naming no previous owner at hop 0, inner version 4 and
	 * IHL 5, TCP; neither header a fragment (outer4, check_ipv4_plain). */
	if (*(pkt_u16 *)(data + 12) != bpf_htons(ETH_P_IP) || *(__u8 *)outer != 0x49 || outer->protocol != IPPROTO_IPIP ||
	    (pkt_load32(opt) & 0xffffff) != XDP_FAST_OPT_HEAD || *(__u8 *)ip != 0x45 || ip->protocol != IPPROTO_TCP ||
	    ((outer->frag_off | ip->frag_off) & bpf_htons(IP_MF | IP_OFFSET)))
		return -1;
	/* For us, from a trusted sender, its checksum right (outer4). */
	if (outer->daddr != local_addr || !ipv4_trusted(outer->saddr) || outer_csum_wrong(outer, data_end))
		return -1;
	/* Lengths: the outer packet within what arrived, holding its headers
	 * (outer4, agent_path); the inner within the outer, holding its own
	 * (check_ipv4_plain) and the TCP header with its options (parse_l4). */
	__u32 outer_tot = bpf_ntohs(outer->tot_len), tot = bpf_ntohs(ip->tot_len);
	__u32 doff = tcp->doff;
	if (outer_tot > (__u32)(data_end - data) - sizeof(struct ethhdr) || outer_tot < OUTER_LEN_OPT ||
	    tot < sizeof(struct iphdr) || tot > outer_tot - OUTER_LEN_OPT || doff < 5 || sizeof(struct iphdr) + doff * 4 > tot)
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
		return xdp_decap(ctx, OUTER_LEN_OPT, AGENT_LOCAL_SYN, 0, 0);
	if (!at_newest_epoch(vip, opt))
		return XDP_PASS;
	return xdp_decap(ctx, OUTER_LEN_OPT, AGENT_TO_STACK, 0, 0);
}

#endif
