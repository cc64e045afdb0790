/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Whether a packet belongs to this server: the socket lookups both of the
 * agent's paths make (locality here for IPv4, locality6 in agent6.h).
 */
#ifndef BEAMER_AGENT_LOCALITY_H
#define BEAMER_AGENT_LOCALITY_H

#include "defs.h"
#include "flow.h"

enum locality {
	NOT_LOCAL = 0,
	LOCAL_SOCKET,
	LOCAL_COOKIE,
};

/*
 * Does a non-SYN inner packet belong to this server? TCP: a local socket
 * other than a listener, or an ACK with a valid SYN cookie for a listener.
 * UDP: a socket connected to the client (an unconnected socket would take
 * any datagram, so it proves nothing: docs/wire-format.md, "UDP"). tcp is
 * the TCP header, NULL for UDP and for an ICMP message, whose flow is the
 * connection it quotes. tuple is filled for the packet's family (tuple_len
 * bytes of it), iph is its IP header (iph_len bytes), for the cookie check.
 * Both families call it: locality below, locality6 in agent6.h.
 */
INLINE enum locality sock_locality(struct __sk_buff *skb, struct bpf_sock_tuple *tuple, const __u32 tuple_len,
				   void *iph, const __u32 iph_len, const struct flow *f, struct tcphdr *tcp)
{
	struct bpf_sock *sk;
	enum locality l = NOT_LOCAL;

	if (f->proto == IPPROTO_UDP) {
		sk = bpf_sk_lookup_udp(skb, tuple, tuple_len, BPF_F_CURRENT_NETNS, 0);
		if (!sk)
			return NOT_LOCAL;
		if (sk->dst_port)
			l = LOCAL_SOCKET;
		bpf_sk_release(sk);
		return l;
	}
	sk = bpf_skc_lookup_tcp(skb, tuple, tuple_len, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return NOT_LOCAL;
	if (sk->state != BPF_TCP_LISTEN)
		l = LOCAL_SOCKET;
	else if (tcp && tcp->ack && !tcp->syn && !tcp->rst &&
		 bpf_tcp_check_syncookie(sk, iph, iph_len, tcp, sizeof(*tcp)) == 0)
		l = LOCAL_COOKIE;
	bpf_sk_release(sk);
	return l;
}

/* sock_locality of an IPv4 packet. */
INLINE enum locality locality(struct __sk_buff *skb, struct iphdr *ip, const struct flow *f, struct tcphdr *tcp)
{
	struct bpf_sock_tuple tuple = {};

	tuple.ipv4.saddr = f->saddr;
	tuple.ipv4.daddr = f->daddr;
	tuple.ipv4.sport = f->sport;
	tuple.ipv4.dport = f->dport;
	return sock_locality(skb, &tuple, sizeof(tuple.ipv4), ip, sizeof(*ip), f, tcp);
}

#endif
