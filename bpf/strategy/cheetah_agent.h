/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Cheetah on the server (docs/strategy-cheetah.md), with no change to the
 * application or the kernel. With direct server return the mux never sees
 * the server's packets, so the server writes the cookie:
 *
 *   egress  (cheetah_egress, tc egress): every TCP segment from a Cheetah
 *           VIP this server serves carries the cookie naming this server in
 *           its TSval (layout in include/cheetah_cookie.h);
 *   ingress (cheetah_restore, called by the agent before it hands a packet
 *           to the stack): the client's TSecr, which echoes our rewritten
 *           TSval, is replaced by what the stack can use.
 *
 * What the client sees: TSval = clock(31..23) | cookie | 1 | 63 — constant
 * within a 2.3-hour tick, rising when the tick does, wrapping modulo 2^32
 * like any TCP clock. A SYN-ACK has bit 6 clear and its own low bits, so it
 * is never above the segments after it. The client's PAWS (which drops a
 * segment whose TSval is below the last one by more than 1) therefore never
 * fires, and its 2^31 rule allows 2^8 ticks (24 days) between two segments,
 * the same as Linux's own 24-day rule.
 *
 * What the server's stack sees as TSecr: the 16 cookie bits replaced bits of
 * its clock that cannot be recovered without per-connection state, so the
 * exact echo is gone. Rather than a wrong echo (which would corrupt RTT
 * estimates and, in SYN_RECV, make Linux reject the ACK as a bogus TSecr),
 *   - an echo of a non-SYN-ACK segment (bit 6 set) becomes 0, "no echo":
 *     Linux then measures RTT from sequence numbers (Karn) as for a peer
 *     without timestamps; PAWS on our side checks the client's TSval, which
 *     is untouched;
 *   - an echo of a SYN-ACK (bit 6 clear) arriving for a listener — the
 *     SYN-cookie case — becomes its low 6 bits | 0x40: Linux decodes the
 *     SYN-cookie options (wscale, SACK, ECN) from exactly those 6 bits after
 *     subtracting its per-connection offset, so SYN cookies keep working;
 *     for a request socket or an established one it becomes 0.
 *
 * The key id of a connection's cookie must never change while it lives (a
 * different cookie could be lower: PAWS). Full sockets remember the key id
 * they started with in socket storage; SYN-ACKs use the current one, and the
 * first full-socket segment takes the current one too (a rotation between a
 * SYN-ACK and the next segment, a round trip, is the one window where a
 * connection's key id can change — see the doc).
 */
#ifndef BEAMER_CHEETAH_AGENT_H
#define BEAMER_CHEETAH_AGENT_H

#include "../include/defs.h"
#include "../include/limits.h"
#include "../include/parse.h"
#include "../include/tcp_ts.h"
#include "../include/cheetah_cookie.h"
#include "../include/counters.h"

/* A Cheetah VIP this server serves. Replaced whole on a change (hash map
 * without preallocation: RCU), so a packet sees one consistent record. */
struct cheetah_vip {
	struct cheetah_key keys[2];
	__u16 id;          /* this server's slot in the instance's server table */
	__u8 kid;          /* key id for new connections */
	__u8 pad;
};

enum cheetah_agent_counter {
	CHEETAH_EGRESS_COOKIE = 0,  /* segment from a Cheetah VIP: cookie written */
	CHEETAH_EGRESS_SYNACK,      /* of those: SYN-ACKs (SYN-cookie bits kept) */
	CHEETAH_EGRESS_FAST,        /* of those: NOP NOP TS layout */
	CHEETAH_EGRESS_NO_TS,       /* from a Cheetah VIP without timestamps: untouched (Beamer fallback) */
	CHEETAH_EGRESS_PINNED,      /* of the cookies: key id from the socket's storage */
	CHEETAH_EGRESS_FAILED,      /* could not rewrite: sent unchanged */
	CHEETAH_INGRESS_NO_ECHO,    /* echo of a cookie segment: TSecr 0 for the stack */
	CHEETAH_INGRESS_SYNCOOKIE,  /* echo of a SYN-ACK to a listener: SYN-cookie bits kept */
	CHEETAH_INGRESS_HANDSHAKE,  /* echo of a SYN-ACK to a request/established socket: TSecr 0 */
	CHEETAH_INGRESS_NO_TS,      /* to a Cheetah VIP without timestamps or echo: untouched */
	CHEETAH_INGRESS_FAILED,     /* could not rewrite: dropped */
	CHEETAH_AGENT_COUNTER_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENT_MAX_VIPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __be32);
	__type(value, struct cheetah_vip);
} cheetah_vips SEC(".maps");

/* The key id a connection started with, on its socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} cheetah_kid SEC(".maps");

DECLARE_COUNTERS(cheetah_agent_counters, CHEETAH_AGENT_COUNTER_MAX);
/* How many Cheetah VIPs the agent serves (set by the loader): without any,
 * the ingress skips even the map lookup, so Beamer's fast path pays nothing. */
volatile __u32 cheetah_vips_in_use;

/* Keeps the counter enum in BTF, where the loader reads the counter names. */
volatile const enum cheetah_agent_counter cheetah_agent_counter_max = CHEETAH_AGENT_COUNTER_MAX;

INLINE void cheetah_count(enum cheetah_agent_counter c)
{
	count_in(&cheetah_agent_counters, CHEETAH_AGENT_COUNTER_MAX, c);
}

/* The TS option's offset from the TCP header at tcp_off (fast layout
 * inline, else the general parse), or 0. */
INLINE int skb_ts_offset(struct __sk_buff *skb, __u32 tcp_off, struct tcphdr *tcp, void *data_end, int *fast)
{
	int ts = tcp_ts_fast(tcp, data_end);

	*fast = ts != 0;
	if (ts)
		return ts;
	struct ts_scan s = {};
	__u32 len = tcp_optlen(tcp);
	if (len > TCP_OPTROOM)
		return 0;
	/* Two checks the compiler may not merge into one range test the
	 * verifier cannot follow. */
	asm volatile("" : "+r"(len));
	if (len < TCPOLEN_TS_)
		return 0;
	if (bpf_skb_load_bytes(skb, tcp_off + sizeof(struct tcphdr), s.b, len))
		return 0;
	s.len = len;
	return tcp_ts_general(&s);
}

/* Writes the 32-bit value at off (a TSval or TSecr) and fixes the TCP
 * checksum incrementally. Pointers into the packet are invalid after it. */
INLINE int ts_store(struct __sk_buff *skb, __u32 tcp_off, __u32 off, __be32 old, __be32 new)
{
	if (old == new)
		return 0;
	if (bpf_l4_csum_replace(skb, tcp_off + __builtin_offsetof(struct tcphdr, check), old, new, sizeof(new)))
		return -1;
	return bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0);
}

/*
 * Ingress: the packet at inner (offset of the inner IPv4 header) goes to the
 * stack; if it is for a Cheetah VIP and echoes a timestamp, replace the echo
 * as the header comment says. Returns 0, or -1 when the packet must be
 * dropped (the checksum could not be fixed).
 */
__attribute__((noinline)) int cheetah_restore(struct __sk_buff *skb, __u32 inner)
{
	if (!skb || !cheetah_vips_in_use)
		return 0;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + (inner & 0xff);

	if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return 0;
	if (!bpf_map_lookup_elem(&cheetah_vips, &ip->daddr))
		return 0;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > data_end)
		return 0;
	int fast;
	int ts = skb_ts_offset(skb, inner + sizeof(struct iphdr), tcp, data_end, &fast);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	ip = data + (inner & 0xff);
	tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > data_end)
		return 0;
	__u8 *opt = (__u8 *)tcp + (ts & 0x3f);
	if (!ts || !tcp->ack || (void *)(opt + TCPOLEN_TS_) > data_end) {
		cheetah_count(CHEETAH_INGRESS_NO_TS);
		return 0;
	}
	__be32 old;
	__builtin_memcpy(&old, opt + 6, 4);
	__u32 echo = bpf_ntohl(old);
	if (!echo) {
		cheetah_count(CHEETAH_INGRESS_NO_TS);
		return 0;
	}
	__u32 restored = 0;
	if (echo & TS_NOT_SYNACK) {
		cheetah_count(CHEETAH_INGRESS_NO_ECHO);
	} else {
		struct bpf_sock_tuple tuple = {};
		tuple.ipv4.saddr = ip->saddr;
		tuple.ipv4.daddr = ip->daddr;
		tuple.ipv4.sport = tcp->source;
		tuple.ipv4.dport = tcp->dest;
		struct bpf_sock *sk = bpf_skc_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
		int listener = 0;
		if (sk) {
			listener = sk->state == BPF_TCP_LISTEN;
			bpf_sk_release(sk);
		}
		if (listener) {
			restored = (echo & TS_SYNCOOKIE_BITS) | TS_NOT_SYNACK;
			cheetah_count(CHEETAH_INGRESS_SYNCOOKIE);
		} else {
			cheetah_count(CHEETAH_INGRESS_HANDSHAKE);
		}
	}
	__u32 tcp_off = inner + sizeof(struct iphdr);
	if (ts_store(skb, tcp_off, tcp_off + ts + 6, old, bpf_htonl(restored))) {
		cheetah_count(CHEETAH_INGRESS_FAILED);
		return -1;
	}
	return 0;
}

/* The key id of the connection skb belongs to: pinned on its socket the
 * first time a full socket sends, the current one before that. */
INLINE __u32 connection_kid(struct __sk_buff *skb, __u32 current)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return current;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return current;
	__u32 *kid = bpf_sk_storage_get(&cheetah_kid, sk, 0, 0);
	if (kid) {
		cheetah_count(CHEETAH_EGRESS_PINNED);
		return *kid & 1;
	}
	kid = bpf_sk_storage_get(&cheetah_kid, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (kid)
		*kid = current;
	return current;
}

SEC("tc")
int cheetah_egress(struct __sk_buff *skb)
{
	if ((long)skb->data_end - (long)skb->data < 14 + 20 + 60 && skb->len > 14 + 20)
		bpf_skb_pull_data(skb, skb->len < 14 + 20 + 60 ? skb->len : 14 + 20 + 60);

	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct iphdr *ip = l3_after_eth(data, data_end, 0);

	if (!ip || ip->ihl != 5 || ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	struct cheetah_vip *vip = bpf_map_lookup_elem(&cheetah_vips, &ip->saddr);
	if (!vip)
		return TC_ACT_OK;
	struct tcphdr *tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > data_end)
		return TC_ACT_OK;
	int fast;
	__u32 tcp_off = sizeof(struct ethhdr) + sizeof(struct iphdr);
	int ts = skb_ts_offset(skb, tcp_off, tcp, data_end, &fast);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	ip = data + sizeof(struct ethhdr);
	tcp = (void *)(ip + 1);
	if ((void *)(tcp + 1) > data_end)
		return TC_ACT_OK;
	__u8 *opt = (__u8 *)tcp + (ts & 0x3f);
	if (!ts || (void *)(opt + TCPOLEN_TS_) > data_end) {
		cheetah_count(CHEETAH_EGRESS_NO_TS);
		return TC_ACT_OK;
	}
	int synack = tcp->syn && tcp->ack;
	__u32 kid = synack ? vip->kid : connection_kid(skb, vip->kid);
	/* The key of kid (a constant index keeps the verifier's view simple). */
	struct cheetah_key key = kid ? vip->keys[1] : vip->keys[0];
	__u32 mask = cheetah_mask(&key, ip->daddr, ip->saddr, tcp->dest, tcp->source);
	__u16 cookie = cheetah_cookie(vip->id, kid, mask);

	__be32 old;
	__builtin_memcpy(&old, opt + 2, 4);
	__be32 new = bpf_htonl(ts_with_cookie(bpf_ntohl(old), cookie, synack));
	if (ts_store(skb, tcp_off, tcp_off + ts + 2, old, new)) {
		cheetah_count(CHEETAH_EGRESS_FAILED);
		return TC_ACT_OK;
	}
	cheetah_count(CHEETAH_EGRESS_COOKIE);
	if (synack)
		cheetah_count(CHEETAH_EGRESS_SYNACK);
	if (fast)
		cheetah_count(CHEETAH_EGRESS_FAST);
	return TC_ACT_OK;
}

#endif
