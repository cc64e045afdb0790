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
 *
 * One body, agent_path, for both families and both hooks (is_ipv6 and hook
 * constants at each call, so each program is compiled as if the others did
 * not exist): the outer headers are read by the family's own reader
 * (agent_outer.h), the chaining is the family's own (chain here, chain6 in
 * agent6.h), everything between is shared. Four programs run it:
 *
 *   beamer_agent        tc, IPv4; tail-calls beamer_agent6 for IPv6 frames
 *   beamer_agent6       tc, GUE over IPv6 (issue 16)
 *   beamer_agent_xdp    XDP, IPv4; tail-calls beamer_agent6_xdp for IPv6
 *   beamer_agent6_xdp   XDP, IPv6
 *
 * The XDP programs are the fast path for servers whose NIC runs XDP
 * natively (pkg/dataplane Agent.AttachXDP; the tc program stays attached
 * behind it). Decapsulating in tc costs bpf_skb_adjust_room on a socket
 * buffer already built; in XDP it is moving the Ethernet header forward by
 * the outer header's length before the kernel builds the buffer. So the
 * common case is decided there, and only it: a packet the XDP path
 * decapsulates is one the tc path would have decapsulated with the same
 * state — a TCP SYN, a packet without the option, or a packet from a mux at
 * exactly the newest (incarnation, generation) whose option names no
 * previous owner that could take it (no chaining possible, so no socket
 * lookup needed) — with every check of the tc path passed and a GUE UDP
 * checksum of 0. Everything else — a newer generation (which must be
 * remembered), an older one (socket lookup, maybe a drop), a chainable
 * packet (clock, window, redirect), Cheetah VIPs (their echo is rewritten),
 * UDP, ICMP, anything malformed or untrusted — goes on untouched
 * (XDP_PASS) to the tc program, which decides and counts it as before
 * (agent_ctx.h ctx_drop). The XDP path changes no state but its counters,
 * so what the tc path guarantees (daisy chaining, SYN cookies, generation
 * checks) holds unchanged. A packet decapsulated there reaches the tc
 * program as a plain packet and is counted there as pass_not_encap too.
 * The XDP IPv4 program first reads its most common packet (IP-in-IP, an
 * option naming no previous owner, TCP) in whole words
 * (agent_xdp_fast.h, issue 27), with the same checks and verdicts; any
 * other packet, or one failing a check there, takes agent_path.
 */
#include "include/defs.h"
#include "include/parse.h"
#include "include/flow.h"
#include "include/icmp_steer.h"
#include "include/flow_hash.h"
#include "include/wire.h"
#include "include/csum.h"
#include "include/agent_csum.h"
#include "include/agent_words.h"
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
#include "include/agent_ctx.h"
#include "include/agent_outer.h"
#include "include/agent_xdp_fast.h"


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

/*
 * The first previous owner at or after hop that is not this server, when
 * the VIP chains at all: -1 none, -2 an owner the packet is too short to
 * hold (IPv6 owners are checked where they are read).
 */
INLINE int next_owner(const struct agent_vip *vip, const struct outer_frame *o, const int is_ipv6)
{
	const struct beamer_opt *opt = o->opt;
	__u8 hop = opt->hop;
	int next = -1;

	if (!vip->window || hop >= o->n)
		return -1;
#pragma unroll
	for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
		if (next < 0 && i >= hop && i < o->n) {
			if (is_ipv6) {
				const struct beamer_opt6 *opt6 = (const void *)o->opt;
				if ((void *)opt6->prev[i] + 16 > o->data_end)
					return -2;
				if (!is_local6(opt6->prev[i]))
					next = i;
			} else if (opt->prev[i] != local_addr) {
				next = i;
			}
		}
	}
	return next;
}

/*
 * The agent's decision (this file's header comment), for both families
 * and both hooks: the outer headers (agent_outer.h), then the inner
 * packet's flow — TCP, UDP, or for an ICMP frag needed or Packet Too Big
 * the connection it quotes (a mux steered it by that flow's bucket) — its
 * VIP, and kept, chained or dropped.
 */
INLINE int agent_path(void *ctx, const int hook, const int is_ipv6)
{
	struct outer_frame o = {};
	int action = is_ipv6 ? outer6(ctx, hook, &o) : outer4(ctx, hook, &o);

	if (action >= 0)
		return action;
	void *data_end = o.data_end;
	void *l3 = o.outer + o.len;
	struct iphdr *ip = l3;
	struct ipv6hdr *ip6 = l3;
	if (l3 + L3_LEN(is_ipv6) > data_end)
		return ctx_drop(hook, AGENT_DROP_TRUNCATED);
	if (o.tot < (__u32)o.len)
		return ctx_drop(hook, AGENT_DROP_BAD_HEADER);

	struct tcphdr *tcp = NULL;
	struct flow f = {};
	/* The connection's addresses for an IPv6 socket lookup: the packet's,
	 * or those of the reply an ICMPv6 message quotes. */
	struct in6_addr *client = &ip6->saddr, *vaddr = &ip6->daddr;
	enum parse_verdict pv = parse_flow(l3, data_end, o.tot - o.len, &f, &tcp, is_ipv6);
	if (pv == PARSE_ICMP) {
		if (hook == AGENT_XDP)
			return XDP_PASS;
		void *quote;
		if (icmp_classify(l3, data_end, f.l4_off, &f, &quote, is_ipv6) != ICMP_KIND_TOO_BIG)
			return drop(AGENT_DROP_ICMP);
		agent_count(AGENT_ICMP_FRAG_NEEDED);
		if (is_ipv6) {
			client = &((struct ipv6hdr *)quote)->daddr;
			vaddr = &((struct ipv6hdr *)quote)->saddr;
		}
		pv = PARSE_OK;
	}
	if (pv != PARSE_OK)
		return ctx_drop(hook, parse_drop[pv]);
	if (hook == AGENT_XDP && !tcp)
		return XDP_PASS;

	const struct agent_vip *vip =
		is_ipv6 ? bpf_map_lookup_elem(&agent_vips6, &ip6->daddr) : agent_vip_of(ip->daddr);
	if (!vip)
		return ctx_drop(hook, AGENT_DROP_UNKNOWN_VIP);
	if (hook == AGENT_XDP && !is_ipv6 && cheetah_vips_in_use && bpf_map_lookup_elem(&cheetah_vips, &ip->daddr))
		return XDP_PASS; /* the echo is rewritten in tc */

	/* A connection request is always this server's to answer. */
	if (tcp && flow_is_syn(&f))
		return ctx_decap(ctx, hook, o.len, AGENT_LOCAL_SYN, o.gue, is_ipv6);
	/* No option: a subflow addressed to this server by id (or a QUIC
	 * packet by the id in its connection id), never chained; the stack
	 * serves it or resets it. */
	if (!o.opt)
		return ctx_decap(ctx, hook, o.len, AGENT_STACK_NO_OPTION, o.gue, is_ipv6);

	/* The newest (incarnation, generation) remembered for the VIP, raised
	 * by this packet unless a sanity bound refuses it (agent_epoch.h).
	 * XDP remembers nothing: only a packet at exactly the newest is its. */
	__u32 now = 0; /* read from the clock only when needed */
	int is_newest = 1;
	if (hook == AGENT_XDP) {
		if (!at_newest_epoch(vip, o.opt))
			return XDP_PASS;
	} else {
		is_newest = remember_epoch(vip, o.opt->incarnation, o.opt->generation, &now);
		if (is_newest < 0)
			return drop(AGENT_DROP_UNKNOWN_VIP);
	}

	int next = next_owner(vip, &o, is_ipv6);
	if (hook == AGENT_XDP) {
		if (next != -1)
			return XDP_PASS; /* a previous owner could take it: tc decides */
		return xdp_decap(ctx, o.len, AGENT_TO_STACK, o.gue, is_ipv6);
	}
	if (next == -2)
		return drop(AGENT_DROP_TRUNCATED);
	int chainable = next >= 0 && window_open(vip, o.opt->changed, &f, &now);

	/*
	 * Nothing to daisy-chain and a mux at the newest state: whether the
	 * connection is local or not, the stack is where the packet goes (it
	 * serves it, or resets it). This is the common case — a bucket that has
	 * not moved lately — and it needs no socket lookup and no clock.
	 */
	if (!chainable && is_newest)
		return decap_to_stack(ctx, o.len, AGENT_TO_STACK, is_ipv6);

	enum locality l = is_ipv6 ? locality6(ctx, ip6, client, vaddr, &f, tcp) : locality(ctx, ip, &f, tcp);
	switch (l) {
	case LOCAL_SOCKET:
		return decap_to_stack(ctx, o.len, AGENT_LOCAL_SOCKET, is_ipv6);
	case LOCAL_COOKIE:
		return decap_to_stack(ctx, o.len, AGENT_LOCAL_COOKIE, is_ipv6);
	default:
		break;
	}
	if (chainable) {
		if (is_ipv6)
			return chain6(ctx, o.outer, next);
		return chain(ctx, o.outer, data_end, o.len, next, o.gue);
	}
	return drop(AGENT_DROP_STALE_GENERATION);
}

/* The IPv6 path: a program of its own, tail-called by beamer_agent for
 * IPv6 frames (agent6_prog), so the IPv4 path and its stack are as before. */
SEC("tc")
int beamer_agent6(struct __sk_buff *skb)
{
	return agent_path(skb, AGENT_TC, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct __sk_buff *));
} agent6_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_agent6},
};

SEC("tc")
int beamer_agent(struct __sk_buff *skb)
{
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* Should the tail call fail, the frame goes on to the stack
		 * untouched, as any frame that is not ours. */
		bpf_tail_call(skb, &agent6_prog, 0);
		agent_count(AGENT_PASS_NOT_ENCAP);
		return TC_ACT_OK;
	}
	return agent_path(skb, AGENT_TC, 0);
}

/* The XDP fast path's IPv6 program, tail-called by beamer_agent_xdp for
 * frames that are not IPv4. */
SEC("xdp")
int beamer_agent6_xdp(struct xdp_md *ctx)
{
	return agent_path(ctx, AGENT_XDP, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(struct xdp_md *));
} agent6_xdp_prog SEC(".maps") = {
	.values = {[0] = (void *)&beamer_agent6_xdp},
};

/* The XDP fast path's IPv4 program: the common packet read whole
 * (agent_xdp_fast.h), any other by the general path. */
INLINE int agent_xdp4(struct xdp_md *ctx)
{
	int action = xdp_fast4(ctx);

	if (action >= 0)
		return action;
	return agent_path(ctx, AGENT_XDP, 0);
}

/* IPv4 here; IPv6 frames to beamer_agent6_xdp by a tail call, which leaves
 * the IPv4 path's code as it was (should it fail, they go on to the tc
 * program untouched). */
SEC("xdp")
int beamer_agent_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(struct ethhdr) <= (void *)(long)ctx->data_end &&
	    *(pkt_u16 *)(data + 12) == bpf_htons(ETH_P_IPV6)) {
		bpf_tail_call(ctx, &agent6_xdp_prog, 0);
		return XDP_PASS;
	}
	return agent_xdp4(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
