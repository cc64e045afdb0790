/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's most common packet in few instructions (issue 27): IPv4 without
 * options and not a fragment, TCP or UDP, to a service port of a strategy
 * beamer VIP with IP-in-IP encapsulation, whose bucket never moved. Per
 * packet, the mux's cost is the count of instructions it runs (~0.25 ns
 * each, measured); the general path (mux.c mux_path) reads every shape it
 * accepts field by field into the flow and decision structs on the stack,
 * and writes the outer header and its option byte by byte (struct
 * beamer_opt and struct ethhdr are packed). This reads the one shape in a
 * few word loads and writes the 36 bytes of the outer header in five word
 * stores, its checksum summed from the words in registers.
 *
 * Every check of the general path that the shape reaches is made here, in
 * its order where its outcome is a counted drop, with the same helpers where
 * there are some (vip_find is before it; flow_hash, bucket_word_of_hash,
 * server_word, xdp_nexthop, the too-big answer, the counters, the capture
 * point): a packet of the shape gets the general path's verdict, counters
 * and bytes. The generation rule is the general path's: the VIP's version
 * is loaded before the bucket (barrier()). A packet not of the shape, or
 * failing a check before the version is read, returns 0 and the general
 * path decides it from the start; one to a server-id port or a closed port,
 * or whose bucket moved or has no usable owner, continues on the general
 * path's decision (decide_by_server_id, decide_by_bucket_word with the
 * bucket as read) and transmit (forward4_decided), with the flow as parsed
 * and the version as read, so it pays the parse and the bucket read once.
 * No fallback comes after a side effect.
 *
 * The Beamer 1K bench packet (TCP, bucket never moved, published next
 * hop) ran 644 instructions of the compiled program before this and runs
 * 503 with it (llvm-objdump, its path followed by hand; helper calls
 * counted once): the same parse and bucket read, 81 fewer in the decision
 * and next hop (no decision struct, no option built on the stack), 59
 * fewer in the encapsulation and counters.
 *
 * pkg/dataplane TestMuxFastShapeChecks breaks the shape one check at a
 * time, TestMuxFastShapeRandom compares the program with and without this
 * on randomly changed packets (verdict, counters, output bytes).
 */
#ifndef BEAMER_MUX_FAST_H
#define BEAMER_MUX_FAST_H

#include "defs.h"
#include "agent_words.h"
#include "flow.h"
#include "flow_hash.h"
#include "wire.h"
#include "ports.h"
#include "decision.h"
#include "../strategy/beamer.h"
#include "nexthop.h"
#include "mux_addr.h"
#include "mux_transmit.h"
#include "mux_verdict.h"
#include "mux_send4.h"

/* Off only in tests (pkg/dataplane TestMuxFastShape*), to compare. */
volatile const __u32 mux_fast_shape = 1;

/* The outer header's constant halves as an LE 64-bit load sees them:
 * TTL and protocol (the checksum, bytes 10-11, is or-ed in), and the
 * option's type and length after the server's address (hop, flags 0). */
#define FAST_TTL_PROTO (BEAMER_OUTER_TTL | IPPROTO_IPIP << 8)
#define FAST_OPT_HEAD (BEAMER_OPT_TYPE | BEAMER_OPT_FIXED << 8)
#define FAST_VIHL (0x40 | OUTER_LEN_OPT >> 2) /* version 4, IHL 9 */

/*
 * The packet at ip (IPv4, its fixed header within the packet), to vip:
 * 1 with the XDP action in *action, or 0 for the general path. (A flag
 * apart from the action: an action from a helper, bpf_redirect's, is any
 * number to the verifier, which would follow a -1 of it into the general
 * path with registers the compiler no longer kept for it.)
 */
INLINE int mux_fast4(struct xdp_md *ctx, struct iphdr *ip, const struct vip_info *vip, int *action)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *l4 = ip + 1;

	if (!mux_fast_shape || vip->strategy != STRATEGY_BEAMER || vip->encap != ENCAP_IPIP ||
	    vip->n_ranges > VIP_RECORD_RANGES)
		return 0;
	/* check_ipv4_plain: version 4 and IHL 5 (one byte), the total length
	 * holding the header and within the packet, not a fragment. */
	__u64 head = pkt_load64(ip); /* version/IHL, TOS, total length, id, fragment word */
	__u32 tot = bpf_ntohs(ip->tot_len);
	__u8 proto = ip->protocol;
	if ((__u8)head != 0x45 || tot < sizeof(*ip) || tot > (__u32)(data_end - (void *)ip) ||
	    (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return 0;
	/* parse_l4: the header within the packet, its length within the IP
	 * packet's. */
	struct tcphdr *tcp = NULL;
	__u8 tcp_flags = 0;
	__u32 udp = 0;
	if (l4 + sizeof(struct udphdr) > data_end)
		return 0;
	if (proto == IPPROTO_TCP) {
		tcp = l4;
		if ((void *)(tcp + 1) > data_end || tcp->doff < 5 || sizeof(*ip) + tcp->doff * 4 > tot)
			return 0;
		tcp_flags = ((__u8 *)tcp)[13];
	} else if (proto == IPPROTO_UDP) {
		__u32 ulen = bpf_ntohs(((struct udphdr *)l4)->len);
		if (ulen < sizeof(struct udphdr) || sizeof(*ip) + ulen > tot)
			return 0;
		udp = 1;
	} else {
		return 0;
	}
	/* The ports as one word: source port high, destination low (host
	 * order), what the flow hash mixes. */
	__u32 ports = bpf_ntohl(pkt_load32(l4));
	__u16 p = (__u16)ports;
	/* port_class, then route: a QUIC port of a QUIC VIP is the general
	 * path's; a server id and a closed port are decided below as route
	 * decides them. (The record's fields but the version never change
	 * while it is named: read before the version as well as after.) */
	enum port_class port = PORT_CLOSED;
	if (!udp && vip->id_low && p >= vip->id_low && p <= vip->id_high)
		port = PORT_SERVER_ID;
	else if (record_ranges_hold(vip, p, udp))
		port = PORT_SERVICE;
	if (port == PORT_SERVICE && udp && (vip->flags & VIP_F_QUIC) && in_range(vip->quic_ports, p))
		return 0;

	__be32 saddr = ip->saddr, daddr = ip->daddr;
	__u64 version = READ_ONCE_U64(&vip->version);
	__u32 table = vip->table;
	barrier();
	void *servers = bpf_map_lookup_elem(&server_tables, &table);
	if (!servers)
		return 0;

	/* decide_by_bucket, for a bucket that never moved. */
	int why = 0;
	__u64 bucket = 0, cur = 0;
	if (port == PORT_SERVICE) {
		__u32 hash = flow_hash_ports(saddr, daddr, ports, proto);
		bucket = bucket_word_of_hash(vip, hash, &why);
		__u16 current = BUCKET_CURRENT(bucket);
		if (current && !BUCKET_CHAIN(bucket))
			cur = server_word(servers, current);
	}
	/* Anything else as route decides it: a moved bucket (or one without
	 * a usable owner) from the bucket as read, a server id, a closed
	 * port; then forward4's tail. */
	if (!cur) {
		struct flow f = {.saddr = saddr, .daddr = daddr, .sport = bpf_htons(ports >> 16), .dport = bpf_htons(p),
				 .proto = proto, .tcp_flags = tcp_flags, .l4_off = sizeof(*ip)};
		struct decision d = {};
		int verdict = MUX_DROP_CLOSED_PORT;
		if (port == PORT_SERVICE)
			verdict = decide_by_bucket_word(vip, servers, &f, bucket, why, &d);
		else if (port == PORT_SERVER_ID)
			verdict = decide_by_server_id(servers, p, &d);
		*action = forward4_decided(ctx, vip, &f, &d, verdict, ip, 0, version);
		return 1;
	}

	/* transmit_as, IP-in-IP with the 16-byte option. */
	struct nexthop_answer nh;
	__be32 to = SERVER_ADDR(cur), from = mux_addr;
	__u16 vip_stat = vip->stats;
	why = nexthop_drop(xdp_nexthop(ctx, &from, &to, 0, &nh));
	if (why) {
		*action = drop(vip_stat, why);
		return 1;
	}
	if (tot + OUTER_LEN_OPT > nh.mtu) {
		*action = too_big4(ctx, vip_stat, (__be16)(head >> 48), OUTER_LEN_OPT, nh.mtu);
		return 1;
	}

	/* The outer header as an LE load sees its words: version and IHL,
	 * the inner TOS, the total length, id 0, the inner DF alone; TTL,
	 * protocol, checksum (below), the mux's address; the server's address
	 * and the option's head; generation and incarnation (big-endian each,
	 * generation first: the version word swapped whole, halves exchanged);
	 * the time of change, 0 for a bucket that never moved. */
	__u64 w0 = FAST_VIHL | (head & 0xff00) | (__u64)bpf_htons(tot + OUTER_LEN_OPT) << 16 |
		   (head & ((__u64)bpf_htons(IP_DF) << 48));
	__u64 epoch = __builtin_bswap64(version);
	__u64 w3 = epoch << 32 | epoch >> 32;
	__u64 sum = (w0 & 0xffffffff) + (w0 >> 32) + FAST_TTL_PROTO + from + to + FAST_OPT_HEAD + (w3 & 0xffffffff) +
		    (w3 >> 32);
	__u64 w1 = FAST_TTL_PROTO | (__u64)csum_fold64(sum) << 16 | (__u64)from << 32;
	__u64 w2 = to | (__u64)FAST_OPT_HEAD << 32;

	if (bpf_xdp_adjust_head(ctx, -OUTER_LEN_OPT)) {
		*action = drop(vip_stat, MUX_DROP_ENCAP);
		return 1;
	}
	void *data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) + OUTER_LEN_OPT > data_end) {
		*action = drop(vip_stat, MUX_DROP_ENCAP);
		return 1;
	}
	void *outer = data + sizeof(struct ethhdr);
	*(pkt_u16 *)(data + 12) = bpf_htons(ETH_P_IP);
	*(pkt_u64 *)outer = w0;
	*(pkt_u64 *)(outer + 8) = w1;
	*(pkt_u64 *)(outer + 16) = w2;
	*(pkt_u64 *)(outer + 24) = w3;
	*(pkt_u32 *)(outer + 32) = 0;
	*action = transmit_out(ctx, data, &nh, MUX_FWD_BUCKET, 0, vip_stat, SERVER_STAT(cur), tot,
			    (tcp_flags & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN, 0, 0);
	return 1;
}

#endif
