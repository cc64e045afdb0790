/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Where the agent's tc program sends a packet it does not drop, for both
 * families (agent.c agent_path and chain, agent6.h chain6; is_ipv6 is a
 * constant at each call, so each family is compiled as if the other did
 * not exist): to the local stack without its outer headers
 * (decap_to_stack), or on to a previous owner with rewritten outer headers
 * (chain_send).
 */
#ifndef BEAMER_AGENT_SEND_H
#define BEAMER_AGENT_SEND_H

#include "defs.h"
#include "agent_maps.h"
#include "agent_verdict.h"
#include "capture.h"
#include "../strategy/cheetah_agent.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV6
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8) /* Linux 6.3 */
#endif

/* Strips the outer headers (outer_len bytes after Ethernet) and hands the
 * inner packet to the stack, counted why (and ipv6). */
INLINE int decap_to_stack(struct __sk_buff *skb, int outer_len, enum agent_counter why, const int is_ipv6)
{
	/* Cheetah VIPs (IPv4 only): the client's TSecr echoes our cookie, not
	 * our clock. Without any, no call (cheetah_restore would return at once). */
	if (!is_ipv6 && cheetah_vips_in_use && cheetah_restore(skb, sizeof(struct ethhdr) + outer_len))
		return drop(AGENT_DROP_DECAP);
	if (bpf_skb_adjust_room(skb, -outer_len, BPF_ADJ_ROOM_MAC,
				is_ipv6 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV6 : BPF_F_ADJ_ROOM_DECAP_L3_IPV4))
		return drop(AGENT_DROP_DECAP);
	agent_count(why);
	if (is_ipv6) {
		agent_count(AGENT_IPV6);
		capture_skb6(skb, CAPTURE_AGENT_UP);
	} else {
		capture_skb(skb, CAPTURE_AGENT_UP);
	}
	return TC_ACT_OK;
}

/* Writes the first store_len bytes of hdr (the rewritten outer headers,
 * from the IP header on) over the packet's and sends it from saddr to
 * daddr (an IPv4 address in word 0, or IPv6's four words), an outer
 * packet of tot_len bytes carrying l4. Pointers into the packet are
 * invalid after this. */
INLINE int chain_send(struct __sk_buff *skb, const void *hdr, const __u32 store_len, __u8 l4, __u32 tot_len,
		      const __be32 *saddr, const __be32 *daddr, const int is_ipv6)
{
	struct bpf_fib_lookup fib = {};
	fib.l4_protocol = l4;
	fib.tot_len = tot_len;
	if (is_ipv6) {
		fib.family = AF_INET6;
		__builtin_memcpy(fib.ipv6_src, saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, daddr, 16);
	} else {
		fib.family = AF_INET;
		fib.ipv4_src = saddr[0];
		fib.ipv4_dst = daddr[0];
	}
	fib.ifindex = skb->ifindex; /* at tc ingress: the device it came in on */
	long rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return drop(AGENT_DROP_CHAIN_NO_ROUTE);

	if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), hdr, store_len, 0))
		return drop(AGENT_DROP_CHAIN_FAILED);

	agent_count(AGENT_CHAINED);
	if (is_ipv6)
		agent_count(AGENT_IPV6);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		/* Let the kernel resolve the next hop and queue the packet. */
		struct bpf_redir_neigh nh = {};
		if (is_ipv6) {
			nh.nh_family = AF_INET6;
			__builtin_memcpy(nh.ipv6_nh, fib.ipv6_dst, 16);
			capture_skb6(skb, CAPTURE_AGENT_CHAIN);
		} else {
			nh.nh_family = AF_INET;
			nh.ipv4_nh = fib.ipv4_dst;
			capture_skb(skb, CAPTURE_AGENT_CHAIN);
		}
		return bpf_redirect_neigh(fib.ifindex, &nh, sizeof(nh), 0);
	}
	if (bpf_skb_store_bytes(skb, 0, fib.dmac, ETH_ALEN, 0) ||
	    bpf_skb_store_bytes(skb, ETH_ALEN, fib.smac, ETH_ALEN, 0))
		return drop(AGENT_DROP_CHAIN_FAILED);
	if (is_ipv6)
		capture_skb6(skb, CAPTURE_AGENT_CHAIN);
	else
		capture_skb(skb, CAPTURE_AGENT_CHAIN);
	return bpf_redirect(fib.ifindex, 0);
}

#endif
