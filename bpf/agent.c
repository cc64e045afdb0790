// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Beamer server agent: a tc ingress program on each server (Beamer §4.2,
 * the server side of Fig. 7). For every IP-in-IP packet from a trusted mux or
 * server it decides:
 *
 *   1. keep it (strip the outer header, hand the inner packet to the stack)
 *      when it is a SYN, belongs to a local socket, or is an ACK carrying a
 *      valid SYN cookie;
 *   2. else, when the option names a previous server, the packet was not
 *      chained before, and the chaining window after the bucket's latest
 *      change is open: daisy-chain it to the previous server;
 *   3. else, when it comes from a mux at the newest generation this server
 *      has seen: hand it to the stack, which resets the connection;
 *   4. else drop it silently: a mux with stale state sent it, and the
 *      client's retransmission will find the right server once it catches up.
 *
 * The socket lookup of step 1 only matters when step 2 or 4 could follow:
 * when nothing can be chained and the generation is the newest, local or
 * not, the packet goes to the stack. That common case skips the lookup.
 *
 * Packets without the option (MPTCP secondary subflows, addressed by server
 * id) are never chained: they are kept, and the stack answers them.
 */
#include "include/defs.h"
#include "include/parse.h"
#include "include/flow_hash.h"
#include "include/wire.h"
#include "include/csum.h"
#include "include/agent_maps.h"

#ifndef AF_INET
#define AF_INET 2
#endif

/* This server's own address (its DIP). Set at load time. */
volatile const __be32 local_addr;

/* Enough linear data for Ethernet, the outer header with option, the inner
 * IPv4 header and a TCP header with options. */
#define HEADERS_NEEDED (sizeof(struct ethhdr) + OUTER_LEN_OPT + sizeof(struct iphdr) + 60)

enum locality {
	NOT_LOCAL = 0,
	LOCAL_SOCKET,
	LOCAL_COOKIE,
};

static const enum agent_counter parse_drop[] = {
	[PARSE_TRUNCATED] = AGENT_DROP_TRUNCATED,
	[PARSE_BAD_HEADER] = AGENT_DROP_BAD_HEADER,
	[PARSE_IP_OPTIONS] = AGENT_DROP_INNER_OPTIONS,
	[PARSE_FRAGMENT] = AGENT_DROP_FRAGMENT,
	[PARSE_NOT_TCP] = AGENT_DROP_NOT_TCP,
};

INLINE int drop(enum agent_counter why)
{
	agent_count(why);
	return TC_ACT_SHOT;
}

/* Does a non-SYN inner packet belong to this server: a local socket other
 * than a listener, or an ACK with a valid SYN cookie for a listener? */
INLINE enum locality locality(struct __sk_buff *skb, struct iphdr *ip, struct tcphdr *tcp)
{
	struct bpf_sock_tuple tuple = {};

	tuple.ipv4.saddr = ip->saddr;
	tuple.ipv4.daddr = ip->daddr;
	tuple.ipv4.sport = tcp->source;
	tuple.ipv4.dport = tcp->dest;
	struct bpf_sock *sk = bpf_skc_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return NOT_LOCAL;

	enum locality l = NOT_LOCAL;
	if (sk->state != BPF_TCP_LISTEN)
		l = LOCAL_SOCKET;
	else if (tcp->ack && !tcp->syn && !tcp->rst &&
		 bpf_tcp_check_syncookie(sk, ip, sizeof(*ip), tcp, sizeof(*tcp)) == 0)
		l = LOCAL_COOKIE;
	bpf_sk_release(sk);
	return l;
}

INLINE int decap_to_stack(struct __sk_buff *skb, int with_opt, enum agent_counter why)
{
	long rc;

	if (with_opt)
		rc = bpf_skb_adjust_room(skb, -OUTER_LEN_OPT, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_DECAP_L3_IPV4);
	else
		rc = bpf_skb_adjust_room(skb, -OUTER_LEN_PLAIN, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_DECAP_L3_IPV4);
	if (rc)
		return drop(AGENT_DROP_DECAP);
	agent_count(why);
	return TC_ACT_OK;
}

/* Sends the packet on to the previous server: the outer header now goes from
 * us to it, with the chained flag set so it is never chained again. */
INLINE int chain(struct __sk_buff *skb, struct iphdr *outer, struct beamer_opt *opt)
{
	struct {
		struct iphdr ip;
		struct beamer_opt opt;
	} hdr;

	__builtin_memcpy(&hdr.ip, outer, sizeof(hdr.ip));
	__builtin_memcpy(&hdr.opt, opt, sizeof(hdr.opt));
	hdr.ip.saddr = local_addr;
	hdr.ip.daddr = opt->prev_dip;
	hdr.ip.ttl = BEAMER_OUTER_TTL;
	hdr.ip.check = 0;
	hdr.opt.flags |= BEAMER_OPT_F_CHAINED;
	hdr.ip.check = ipv4_header_csum(&hdr, OUTER_LEN_OPT / 2);

	struct bpf_fib_lookup fib = {};
	fib.family = AF_INET;
	fib.l4_protocol = IPPROTO_IPIP;
	fib.tot_len = bpf_ntohs(hdr.ip.tot_len);
	fib.ipv4_src = hdr.ip.saddr;
	fib.ipv4_dst = hdr.ip.daddr;
	fib.ifindex = skb->ifindex; /* at tc ingress: the device it came in on */
	long rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return drop(AGENT_DROP_CHAIN_NO_ROUTE);

	/* Pointers into the packet are invalid after this. */
	if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), &hdr, sizeof(hdr), 0))
		return drop(AGENT_DROP_CHAIN_FAILED);

	agent_count(AGENT_CHAINED);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		/* Let the kernel resolve the next hop and queue the packet. */
		struct bpf_redir_neigh nh = {.nh_family = AF_INET, .ipv4_nh = fib.ipv4_dst};
		return bpf_redirect_neigh(fib.ifindex, &nh, sizeof(nh), 0);
	}
	if (bpf_skb_store_bytes(skb, 0, fib.dmac, ETH_ALEN, 0) ||
	    bpf_skb_store_bytes(skb, ETH_ALEN, fib.smac, ETH_ALEN, 0))
		return drop(AGENT_DROP_CHAIN_FAILED);
	return bpf_redirect(fib.ifindex, 0);
}

INLINE __u32 unix_seconds(void)
{
	__u32 key = 0;
	__u64 *offset = bpf_map_lookup_elem(&agent_clock, &key);
	__u64 now = bpf_ktime_get_boot_ns();

	if (offset)
		now += READ_ONCE_U64(offset);
	return (__u32)(now / 1000000000ULL);
}

SEC("tc")
int beamer_agent(struct __sk_buff *skb)
{
	if (skb->len > HEADERS_NEEDED && (long)skb->data_end - (long)skb->data < (long)HEADERS_NEEDED)
		bpf_skb_pull_data(skb, HEADERS_NEEDED);

	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *outer = ipv4_after_eth(data, data_end);

	if (!outer || outer->protocol != IPPROTO_IPIP) {
		agent_count(AGENT_PASS_NOT_ENCAP);
		return TC_ACT_OK;
	}
	if (outer->daddr != local_addr) {
		agent_count(AGENT_PASS_NOT_FOR_US);
		return TC_ACT_OK;
	}

	/* Encapsulated for us: from here on kept, chained, or dropped. */
	struct lpm_v4_key src = {.prefixlen = 32, .addr = outer->saddr};
	if (!bpf_map_lookup_elem(&trusted_sources, &src))
		return drop(AGENT_DROP_UNTRUSTED);

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
	int with_opt = outer->ihl == OUTER_LEN_OPT / 4;
	if (with_opt) {
		opt = (void *)(outer + 1);
		if ((void *)(opt + 1) > data_end)
			return drop(AGENT_DROP_TRUNCATED);
		if (opt->type != BEAMER_OPT_TYPE || opt->len != BEAMER_OPT_LEN)
			return drop(AGENT_DROP_BAD_OPTION);
		ip = (void *)(opt + 1);
	} else if (outer->ihl == OUTER_LEN_PLAIN / 4) {
		ip = (void *)(outer + 1);
	} else {
		return drop(AGENT_DROP_BAD_OPTION);
	}
	if ((void *)(ip + 1) > data_end)
		return drop(AGENT_DROP_TRUNCATED);
	__u32 outer_len = (void *)ip - (void *)outer;
	if (outer_tot < outer_len)
		return drop(AGENT_DROP_BAD_HEADER);

	struct tcphdr *tcp;
	enum parse_verdict pv = check_ipv4_plain(ip, outer_tot - outer_len);
	if (pv == PARSE_OK)
		pv = parse_tcp_after(ip, data_end, &tcp);
	if (pv != PARSE_OK)
		return drop(parse_drop[pv]);

	struct agent_vip *vip = bpf_map_lookup_elem(&agent_vips, &ip->daddr);
	if (!vip)
		return drop(AGENT_DROP_UNKNOWN_VIP);

	/* A connection request is always this server's to answer. */
	if (tcp->syn && !tcp->ack)
		return decap_to_stack(skb, with_opt, AGENT_LOCAL_SYN);
	/* No option: a subflow addressed to this server by id, never chained;
	 * the stack serves it or resets it. */
	if (!opt)
		return decap_to_stack(skb, 0, AGENT_STACK_NO_OPTION);

	/* Remember the newest generation and the latest bucket change seen. */
	__u32 gen = bpf_ntohl(opt->generation);
	__u32 slot = vip->slot;
	__u32 *gen_seen = bpf_map_lookup_elem(&generation_seen, &slot);
	__u32 newest = gen_seen ? atomic_max_u32(gen_seen, gen) : gen;

	int chainable = 0;
	if (opt->prev_dip && !(opt->flags & BEAMER_OPT_F_CHAINED) && opt->prev_dip != local_addr && vip->window) {
		__u32 changed = bpf_ntohl(opt->changed);
		__u32 index = vip->bucket_base +
			      bucket_of(flow_hash(ip->saddr, ip->daddr, tcp->source, tcp->dest, IPPROTO_TCP), vip->buckets);
		__u32 *seen = bpf_map_lookup_elem(&bucket_changed, &index);
		if (seen)
			changed = atomic_max_u32(seen, changed);
		chainable = (__u64)unix_seconds() < (__u64)changed + vip->window;
	}

	/*
	 * Nothing to daisy-chain and a mux at the newest generation: whether
	 * the connection is local or not, the stack is where the packet goes
	 * (it serves it, or resets it). This is the common case — a bucket that
	 * has not moved lately — and it needs no socket lookup.
	 */
	if (!chainable && gen == newest)
		return decap_to_stack(skb, 1, AGENT_TO_STACK);

	switch (locality(skb, ip, tcp)) {
	case LOCAL_SOCKET:
		return decap_to_stack(skb, 1, AGENT_LOCAL_SOCKET);
	case LOCAL_COOKIE:
		return decap_to_stack(skb, 1, AGENT_LOCAL_COOKIE);
	default:
		break;
	}
	if (chainable)
		return chain(skb, outer, opt);
	return drop(AGENT_DROP_STALE_GENERATION);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifdef BEAMER_BENCH
#include "bench/agent_bench.h"
#endif
