// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Beamer server agent: a tc ingress program on each server (Beamer §4.2,
 * the server side of Fig. 7, extended to multi-hop chains). For every IP-in-IP
 * packet from a trusted mux or server it decides:
 *
 *   1. keep it (strip the outer header, hand the inner packet to the stack)
 *      when it is a SYN, belongs to a local socket, or is an ACK carrying a
 *      valid SYN cookie;
 *   2. else, when the option names a previous owner of the bucket at or after
 *      position hop that is not this server, and the chaining window after
 *      the bucket's latest change is open: daisy-chain it to the first such
 *      owner i, with hop = i + 1 (hop only grows and is at most 6: no loop);
 *   3. else, when it comes from a mux at the newest (incarnation, generation)
 *      this server remembers: hand it to the stack, which resets it;
 *   4. else drop it silently: a mux with stale state sent it, and the
 *      client's retransmission will find the right server once it catches up.
 *
 * The socket lookup of step 1 only matters when step 2 or 4 could follow:
 * when nothing can be chained and the generation is the newest, local or
 * not, the packet goes to the stack. That common case skips the lookup.
 *
 * Sanity bounds (issue 11.7): a packet cannot move the remembered state
 * arbitrarily far ahead. A change time beyond the agent's clock + max_skew
 * is clamped to it (counted); an incarnation beyond the clock + max_skew is
 * not remembered (counted), nor is a generation more than max_gen_jump ahead
 * of the remembered one in the same incarnation (counted) — such packets are
 * handled as if from a stale mux (kept if local, chained if chainable, else
 * dropped). And the newest remembered is the largest seen in the last one to
 * two rotation periods (the daemon flips generation_seen's current word every
 * period), so even an accepted forged value is forgotten within two periods.
 *
 * Packets without the option (MPTCP secondary subflows, addressed by server
 * id) are never chained: they are kept, and the stack answers them.
 */
#include "include/defs.h"
#include "include/parse.h"
#include "include/flow.h"
#include "include/icmp_steer.h"
#include "include/flow_hash.h"
#include "include/wire.h"
#include "include/csum.h"
#include "include/agent_csum.h"
#include "include/agent_maps.h"
#include "include/capture.h"
#include "include/gue_agent.h"
#include "strategy/cheetah_agent.h"
#include "include/agent_config.h"
#include "include/agent_verdict.h"
#include "include/agent_locality.h"
#include "include/agent_send.h"
#include "include/agent_epoch.h"
#include "include/agent6.h"
#include "include/agent_xdp.h"


/* Enough linear data for Ethernet, the longest outer headers (GUE's), the
 * inner IPv4 header and a TCP header with options. */
#define HEADERS_NEEDED (sizeof(struct ethhdr) + GUE4_LEN_MAX + sizeof(struct iphdr) + 60)

/* The outer headers a chained packet gets, in the encapsulation it came in:
 * one buffer for both, so the program's stack holds one. GUE's holds what
 * changes: the headers and the private data's first word (hop). */
union chain_hdr {
	struct {
		struct iphdr ip;
		struct beamer_opt opt;
	} ipip;
	struct {
		struct iphdr ip;
		struct udphdr udp;
		struct guehdr g;
		__u8 opt_head[4]; /* type, length, hop, flags */
	} gue;
};

_Static_assert(sizeof(((union chain_hdr *)0)->gue) == GUE4_LEN_PLAIN + 4, "GUE headers are laid out without padding");

/* The same in GUE: the chained packet keeps its encapsulation (and its UDP
 * source port, the flow's entropy); the outer addresses, the hop byte of
 * the private data and the IPv4 checksum change, the UDP checksum becomes
 * 0. gue4_parse checked that GUE4_LEN_MAX bytes from outer are in the
 * linear data. */
INLINE int chain_gue(struct __sk_buff *skb, union chain_hdr *hdr, struct iphdr *outer, void *data_end, int next)
{
	struct beamer_opt *opt = (void *)outer + GUE4_LEN_PLAIN;

	if ((void *)(opt + 1) > data_end)
		return drop(AGENT_DROP_TRUNCATED); /* checked before; keeps the verifier sure */
	__builtin_memcpy(hdr, outer, sizeof(hdr->gue));
	hdr->gue.ip.saddr = local_addr;
	hdr->gue.ip.daddr = opt->prev[next];
	hdr->gue.ip.ttl = BEAMER_OUTER_TTL;
	hdr->gue.ip.check = 0;
	hdr->gue.ip.check = ipv4_header_csum(&hdr->gue.ip, OUTER_LEN_PLAIN / 2);
	hdr->gue.udp.check = 0;
	hdr->gue.opt_head[2] = next + 1;
	return chain_send(skb, hdr, sizeof(hdr->gue), IPPROTO_UDP, bpf_ntohs(hdr->gue.ip.tot_len), &hdr->gue.ip.saddr,
			  &hdr->gue.ip.daddr, 0);
}

/* The relay rule (issue 23): a packet is chained only to a previous owner
 * inside the trusted prefixes, those whose encapsulated packets this agent
 * accepts (every mux and server of the instance must be in them, for the
 * chain's next server to accept what we send). The option comes from a
 * trusted sender, but a broken or hostile one must not make servers relay
 * client packets anywhere. The same map, one more lookup, and only on the
 * chaining path. */
INLINE int owner_trusted(struct iphdr *outer, void *data_end, int gue, int next)
{
	struct beamer_opt *opt = (void *)outer + (gue ? GUE4_LEN_PLAIN : OUTER_LEN_PLAIN);

	if ((void *)(opt + 1) > data_end || next < 0 || next >= BEAMER_MAX_CHAIN)
		return 0; /* checked before; keeps the verifier sure */
	return ipv4_trusted(opt->prev[next]);
}

/* Sends the packet on to the bucket's previous owner prev[next]: the outer
 * header now goes from us to it, with hop = next + 1, so that it, and every
 * server after it, only looks further down the list. The caller checked
 * that OUTER_LEN_MAX bytes from outer are in the linear data. gue: the
 * packet came in GUE, and leaves in it (chain_gue). */
INLINE int chain(struct __sk_buff *skb, struct iphdr *outer, void *data_end, int outer_len, int next, int gue)
{
	union chain_hdr hdr;

	if (next < 0 || next >= BEAMER_MAX_CHAIN)
		return drop(AGENT_DROP_CHAIN_FAILED);
	if (!owner_trusted(outer, data_end, gue, next))
		return drop(AGENT_DROP_UNTRUSTED_OWNER);
	if (gue)
		return chain_gue(skb, &hdr, outer, data_end, next);
	__builtin_memcpy(&hdr, outer, OUTER_LEN_MAX);
	hdr.ipip.ip.saddr = local_addr;
	hdr.ipip.ip.daddr = hdr.ipip.opt.prev[next];
	hdr.ipip.ip.ttl = BEAMER_OUTER_TTL;
	hdr.ipip.ip.check = 0;
	hdr.ipip.opt.hop = next + 1;
	const __u16 *w = (const __u16 *)&hdr;
	__u32 sum = 0;
#pragma unroll
	for (int i = 0; i < OUTER_LEN_MAX / 2; i++)
		if (i < (int)((__u32)outer_len >> 1))
			sum += w[i];
	hdr.ipip.ip.check = csum_fold32(sum);
	/* Only the IP header and the option's first word (hop) change. */
	return chain_send(skb, &hdr, sizeof(struct iphdr) + 4, IPPROTO_IPIP, bpf_ntohs(hdr.ipip.ip.tot_len), &hdr.ipip.ip.saddr,
			  &hdr.ipip.ip.daddr, 0);
}

SEC("tc")
int beamer_agent(struct __sk_buff *skb)
{
	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return agent_ipv6(skb); /* bpf/include/agent6.h */
	if (skb->len > HEADERS_NEEDED && (long)skb->data_end - (long)skb->data < (long)HEADERS_NEEDED)
		bpf_skb_pull_data(skb, HEADERS_NEEDED);

	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *outer = l3_after_eth(data, data_end, 0);
	struct udphdr *udp = NULL; /* GUE: its UDP header (gue_agent.h) */

	if (outer && outer->protocol == IPPROTO_UDP)
		udp = gue4_udp(outer, data_end);
	if (!outer || (outer->protocol != IPPROTO_IPIP && !udp)) {
		agent_count(AGENT_PASS_NOT_ENCAP);
		return TC_ACT_OK;
	}
	if (outer->daddr != local_addr) {
		agent_count(AGENT_PASS_NOT_FOR_US);
		return TC_ACT_OK;
	}

	/* Encapsulated for us: from here on kept, chained, or dropped. */
	capture_skb(skb, CAPTURE_AGENT_RX);
	if (!ipv4_trusted(outer->saddr))
		return drop(AGENT_DROP_UNTRUSTED);

	/* Before any field of it is believed (issue 23): a corrupted
	 * previous owner must not become a valid packet to a wrong address. */
	if (outer_csum_wrong(outer, data_end))
		return drop(AGENT_DROP_BAD_CHECKSUM);
	__u32 avail = skb->len - sizeof(struct ethhdr);
	if (outer->version != 4)
		return drop(AGENT_DROP_BAD_HEADER);
	if (outer->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return drop(AGENT_DROP_FRAGMENT);
	__u16 outer_tot = bpf_ntohs(outer->tot_len);
	if (outer_tot > avail)
		return drop(AGENT_DROP_TRUNCATED);

	struct beamer_opt *opt = NULL;
	struct iphdr *ip;
	int outer_len = outer->ihl * 4;
	int n = 0; /* previous owners in the option */
	if (udp) {
		/* GUE: the private data is the option (gue.h). */
		outer_len = gue4_parse(outer, udp, data_end, outer_tot);
		if (outer_len == -GUE_TRUNCATED)
			return drop(AGENT_DROP_TRUNCATED);
		if (outer_len == -GUE_BAD_HEADER)
			return drop(AGENT_DROP_BAD_HEADER);
		if (outer_len < GUE4_LEN_PLAIN || outer_len > GUE4_LEN_MAX)
			return drop(AGENT_DROP_BAD_OPTION);
		if (udp->check) {
			/* Rare (muxes and agents send 0): verified over the
			 * whole packet, pulled in, so the headers move. */
			if (!gue_udp_csum_ok(skb, 0))
				return drop(AGENT_DROP_BAD_UDP_CHECKSUM);
			data = (void *)(long)skb->data;
			data_end = (void *)(long)skb->data_end;
			outer = l3_after_eth(data, data_end, 0);
			if (!outer)
				return drop(AGENT_DROP_TRUNCATED);
		}
		if (outer_len > GUE4_LEN_PLAIN) {
			opt = (void *)outer + GUE4_LEN_PLAIN;
			if ((void *)(opt + 1) > data_end)
				return drop(AGENT_DROP_TRUNCATED);
			n = (outer_len - GUE4_LEN_OPT) >> 2;
		}
		agent_count(AGENT_GUE);
	} else if (outer_len > OUTER_LEN_PLAIN) {
		/* Valid packets hold the inner IPv4 and TCP headers after the
		 * outer one, so OUTER_LEN_MAX bytes are there whatever n is. */
		opt = (void *)(outer + 1);
		if ((void *)(opt + 1) > data_end)
			return drop(AGENT_DROP_TRUNCATED);
		if (outer_len < OUTER_LEN_OPT || opt->type != BEAMER_OPT_TYPE || opt->len != outer_len - OUTER_LEN_PLAIN)
			return drop(AGENT_DROP_BAD_OPTION);
		n = (outer_len - OUTER_LEN_OPT) >> 2;
		if (opt->hop > n)
			return drop(AGENT_DROP_BAD_OPTION);
	} else if (outer_len != OUTER_LEN_PLAIN) {
		return drop(AGENT_DROP_BAD_OPTION);
	}
	if (outer_len > GUE4_LEN_MAX)
		return drop(AGENT_DROP_BAD_OPTION); /* cannot happen: IHL is 4 bits, GUE's checked */
	ip = (void *)outer + outer_len;
	if ((void *)(ip + 1) > data_end)
		return drop(AGENT_DROP_TRUNCATED);
	if (outer_tot < outer_len)
		return drop(AGENT_DROP_BAD_HEADER);

	/* The inner packet's flow: TCP, UDP, or for an ICMP frag needed the
	 * connection it quotes (a mux steered it by that flow's bucket). */
	struct tcphdr *tcp = NULL;
	struct flow f = {};
	enum parse_verdict pv = parse_flow(ip, data_end, outer_tot - outer_len, &f, &tcp, 0);
	if (pv == PARSE_ICMP) {
		void *quote;
		if (icmp_classify(ip, data_end, f.l4_off, &f, &quote, 0) != ICMP_KIND_TOO_BIG)
			return drop(AGENT_DROP_ICMP);
		agent_count(AGENT_ICMP_FRAG_NEEDED);
		pv = PARSE_OK;
	}
	if (pv != PARSE_OK)
		return drop(parse_drop[pv]);

	const struct agent_vip *vip = agent_vip_of(ip->daddr);
	if (!vip)
		return drop(AGENT_DROP_UNKNOWN_VIP);

	/* A connection request is always this server's to answer. */
	if (tcp && flow_is_syn(&f))
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_SYN, 0);
	/* No option: a subflow addressed to this server by id (or a QUIC
	 * packet by the id in its connection id), never chained; the stack
	 * serves it or resets it. */
	if (!opt)
		return decap_to_stack(skb, outer_len, AGENT_STACK_NO_OPTION, 0);

	/* The newest (incarnation, generation) remembered for the VIP, raised
	 * by this packet unless a sanity bound refuses it (agent_epoch.h). */
	__u32 now = 0; /* read from the clock only when needed */
	int is_newest = remember_epoch(vip, opt->incarnation, opt->generation, &now);
	if (is_newest < 0)
		return drop(AGENT_DROP_UNKNOWN_VIP);

	/* The first previous owner at or after hop that is not this server. */
	int next = -1;
	if (vip->window && opt->hop < n) {
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++)
			if (next < 0 && i >= opt->hop && i < n && opt->prev[i] != local_addr)
				next = i;
	}
	int chainable = next >= 0 && window_open(vip, opt->changed, &f, &now);

	/*
	 * Nothing to daisy-chain and a mux at the newest state: whether the
	 * connection is local or not, the stack is where the packet goes (it
	 * serves it, or resets it). This is the common case — a bucket that has
	 * not moved lately — and it needs no socket lookup and no clock.
	 */
	if (!chainable && is_newest)
		return decap_to_stack(skb, outer_len, AGENT_TO_STACK, 0);

	switch (locality(skb, ip, &f, tcp)) {
	case LOCAL_SOCKET:
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_SOCKET, 0);
	case LOCAL_COOKIE:
		return decap_to_stack(skb, outer_len, AGENT_LOCAL_COOKIE, 0);
	default:
		break;
	}
	if (chainable)
		return chain(skb, outer, data_end, outer_len, next, outer->protocol == IPPROTO_UDP);
	return drop(AGENT_DROP_STALE_GENERATION);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
