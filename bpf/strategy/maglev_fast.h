/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Maglev strategy's most common packet in a straight line (issue 27):
 * IPv4 without options and not a fragment, TCP (not a SYN) or UDP, to a
 * service port of a Maglev VIP with IP-in-IP encapsulation, whose
 * connection is in the connection table (conntrack.h) with a healthy
 * server — a connection-table hit (MUX_CT_HIT), sent without option.
 *
 * Why: at a million connections the table is tens of MiB read at random,
 * and a hit's cost is mostly the wait for its one cache line (with the
 * line made hot, the 1M per-packet row fell from ~500 to ~60 ns on this
 * VM). The general path (mux.c mux_path, route, decide_maglev) asks for
 * that line only after the parse, the VIP's tables and the port checks;
 * here the bucket's address is computed from the packet's first bytes and
 * its line is asked for at once (one load, kept in place by a compiler
 * barrier), the port checks and the server table's lookup after. (Measured
 * against asking at the compare: no difference the bench resolves — the
 * CPU runs ahead to a load whose address is ready — but no check stands
 * between the hash and the line.) The hit is then sent in a straight
 * line: no flow or decision struct, no dispatch; with its line made hot
 * it costs ~51 ns net per packet against the general path's ~62.
 *
 * Anything else — another shape, a SYN, a closed or server-id port, the
 * QUIC port of a QUIC VIP, no table, a miss, a stale entry — returns 0
 * before any side effect (the line's read is none), and the general path
 * decides the packet from the start: its verdict, counters and bytes are
 * the general path's by construction. A hit gets what the general path
 * gives it: the entry touched (ct_touch), then the general path's next hop,
 * too-big answer, encapsulation (xdp_encap_ipv4, 20 bytes, no option) and
 * transmit (transmit_out, verdict MUX_CT_HIT, no detail counter, not a new
 * flow). A Maglev packet carries no option, so the VIP's version is not
 * read (the general path reads it only to write the option).
 *
 * The shape checks are mux_fast.h's (the Beamer straight line) in another
 * order: the ones the hash needs first.
 *
 * pkg/dataplane TestMaglevFastShapeChecks and TestMaglevFastRandom compare
 * the program with and without this (verdict, counters, output bytes).
 */
#ifndef BEAMER_STRATEGY_MAGLEV_FAST_H
#define BEAMER_STRATEGY_MAGLEV_FAST_H

#include "../include/defs.h"
#include "../include/agent_words.h"
#include "../include/flow.h"
#include "../include/wire.h"
#include "../include/ports.h"
#include "../include/encap.h"
#include "../include/nexthop.h"
#include "../include/mux_addr.h"
#include "../include/mux_maps.h"
#include "../include/mux_transmit.h"
#include "../include/mux_verdict.h"
#include "../include/mux_send4.h"
#include "../include/conntrack.h"
#include "maglev.h"

/* Off only in tests (pkg/dataplane TestMaglevFast*), to compare. */
volatile const __u32 maglev_fast_path = 1;

/*
 * The packet at ip (IPv4, its fixed header within the packet), to vip: 1
 * with the XDP action in *action, or 0 for the general path (as
 * mux_fast4).
 */
INLINE int maglev_fast4(struct xdp_md *ctx, struct iphdr *ip, const struct vip_info *vip, int *action)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *l4 = ip + 1;

	if (!maglev_fast_path || vip->strategy != STRATEGY_MAGLEV || vip->encap != ENCAP_IPIP ||
	    vip->n_ranges > VIP_RECORD_RANGES)
		return 0;
#ifdef BEAMER_BENCH
	if (bench_ct_lru) /* the benchmark's reference row: the general path */
		return 0;
#endif
	/* What the hash needs first: IHL 5 (the ports at ip + 20), a TCP
	 * header that is not a SYN, or a UDP header. */
	if (l4 + sizeof(struct udphdr) > data_end)
		return 0;
	__u64 head = pkt_load64(ip); /* version/IHL, TOS, total length, id, fragment word */
	__u8 proto = ip->protocol;
	if ((__u8)head != 0x45)
		return 0;
	struct tcphdr *tcp = l4;
	if (proto == IPPROTO_TCP) {
		if ((void *)(tcp + 1) > data_end)
			return 0;
		if ((((__u8 *)tcp)[13] & (TCPF_SYN | TCPF_ACK)) == TCPF_SYN)
			return 0; /* a new connection: the general path inserts it */
	} else if (proto != IPPROTO_UDP) {
		return 0;
	}
	__be32 saddr = ip->saddr, daddr = ip->daddr;
	__u32 ports = pkt_load32(l4); /* sport | dport << 16, network order each: the key's */
	struct ct_key key;
	ct_key_make(saddr, daddr, ports, proto, &key);
	struct ct_bucket *b = ct_bucket(&key);
	if (!b)
		return 0;
	/* Ask for the bucket's line now; the checks below do not need it. */
	__u64 addrs0 = READ_ONCE_U64(&b->slot[0].addrs);
	barrier();

	/* The rest of check_ipv4_plain and parse_l4: the total length holding
	 * the headers and within the packet, not a fragment. */
	__u32 tot = bpf_ntohs(ip->tot_len);
	if (tot < sizeof(*ip) || tot > (__u32)(data_end - (void *)ip) || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return 0;
	__u32 udp = proto == IPPROTO_UDP;
	if (udp) {
		__u32 ulen = bpf_ntohs(((struct udphdr *)l4)->len);
		if (ulen < sizeof(struct udphdr) || sizeof(*ip) + ulen > tot)
			return 0;
	} else if (tcp->doff < 5 || sizeof(*ip) + tcp->doff * 4 > tot) {
		return 0;
	}
	/* route: a service port, not a server id, not QUIC's. */
	__u16 p = bpf_ntohs((__be16)(ports >> 16));
	if (!udp && vip->id_low && p >= vip->id_low && p <= vip->id_high)
		return 0;
	if (!record_ranges_hold(vip, p, udp))
		return 0;
	if (udp && (vip->flags & VIP_F_QUIC) && in_range(vip->quic_ports, p))
		return 0;
	__u32 table = vip->table;
	void *servers = bpf_map_lookup_elem(&server_tables, &table);
	if (!servers)
		return 0;

	/* decide_maglev's hit. */
	struct ct_slot *s = NULL;
	__u16 id = ct_find_first(b, addrs0, &key, &s);
	if (!id || !s)
		return 0;
	__u64 w = server_word(servers, id);
	if (!w || SERVER_STATE(w) == SERVER_DOWN)
		return 0;
	ct_touch(s);

	/* transmit_as, IP-in-IP without option. */
	struct nexthop_answer nh;
	struct encap_params e = {.saddr = mux_addr, .daddr = SERVER_ADDR(w)};
	__u16 vip_stat = vip->stats;
	int why = nexthop_drop(xdp_nexthop(ctx, &e.saddr, &e.daddr, 0, &nh));
	if (why) {
		*action = drop(vip_stat, why);
		return 1;
	}
	if (tot + OUTER_LEN_PLAIN > nh.mtu) {
		*action = too_big4(ctx, vip_stat, (__be16)(head >> 48), OUTER_LEN_PLAIN, nh.mtu);
		return 1;
	}
	struct ethhdr *eth = xdp_encap_ipv4(ctx, &e, OUTER_LEN_PLAIN);
	if (!eth) {
		*action = drop(vip_stat, MUX_DROP_ENCAP);
		return 1;
	}
	*action = transmit_out(ctx, eth, &nh, MUX_CT_HIT, 0, vip_stat, SERVER_STAT(w), tot, 0, 0, 0);
	return 1;
}

#endif
