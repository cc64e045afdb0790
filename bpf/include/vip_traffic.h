/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Traffic per VIP and per server on the mux (issue 25): what the decision
 * counters (counters.h) cannot say, which VIP and which server a packet was
 * for. Two per-CPU arrays, each indexed by a slot the daemon assigns and
 * names in a word the packet reads anyway, so finding a counter costs no
 * hashing:
 *
 *   mux_vip_traffic     slot from the VIP record (vip_info.stats - 1),
 *                       MAX_VIPS slots: packets, bytes and new flows
 *                       forwarded, and drops by reason;
 *   mux_server_traffic  slot from the server word (SERVER_STAT - 1),
 *                       MAX_SERVER_STATS slots: packets and bytes forwarded
 *                       to that server of that instance.
 *
 * A slot is given to a VIP (a server) when it is published, zeroed then, and
 * given to another only after an RCU grace period once no record (word)
 * names it (pkg/dataplane vip_traffic.go): a new VIP never inherits an old
 * one's counts.
 *
 * Each packet updates one element of each array at most, once its fate is
 * known: the VIP's when it is forwarded or dropped, and the server's when
 * it is forwarded. Every drop of a packet to a VIP is made where the VIP's
 * record (or the decision carrying its slot) is at hand, and passes the
 * slot: no per-packet note (issue 27: a per-CPU lookup and a store on every
 * packet, for the few that are dropped).
 * Packets answered by the mux (ICMP echo) or passed to its stack are not
 * counted per VIP; the decision counters count them.
 *
 * Bytes are the client's IP packet as its header says (IPv4 total length,
 * IPv6 payload length + 40), as the agent's per-VIP counters (bpf/vipstats.c).
 * A new flow is a TCP SYN without ACK; UDP (QUIC too) has no start the mux
 * sees, and counts none.
 */
#ifndef BEAMER_VIP_TRAFFIC_H
#define BEAMER_VIP_TRAFFIC_H

#include "defs.h"
#include "mux_maps.h"

struct vip_traffic {
	__u64 packets;   /* forwarded to a server */
	__u64 bytes;     /* of those packets */
	__u64 new_flows; /* of those, TCP SYNs without ACK */
	__u64 drops[MUX_COUNTER_MAX]; /* dropped, by reason: indexed by the MUX_DROP_* counter
				       * (and MUX_ICMP_TOO_BIG: answered with an ICMP error) */
};

struct server_traffic {
	__u64 packets; /* forwarded to the server */
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_VIPS);
	__type(key, __u32);
	__type(value, struct vip_traffic);
} mux_vip_traffic SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SERVER_STATS);
	__type(key, __u32);
	__type(value, struct server_traffic);
} mux_server_traffic SEC(".maps");

/* The packet to the VIP whose counter slot + 1 is vip (vip_info.stats, 0:
 * none) is dropped (or answered with an ICMP error) for reason why. */
INLINE void vip_traffic_drop(__u16 vip, __u32 why)
{
	if (!vip)
		return;
	__u32 key = vip - 1;
	struct vip_traffic *t = bpf_map_lookup_elem(&mux_vip_traffic, &key);
	if (t && why < MUX_COUNTER_MAX)
		t->drops[why] += 1;
}

/* The packet, of bytes bytes, is on its way to a server: vip and server
 * are the counter slots + 1 of its VIP (vip_info.stats) and of the server
 * (SERVER_STAT of its word), 0 for none; new_flow: a TCP SYN without ACK.
 * The transmit path has both at hand, so it needs no note. */
INLINE void vip_traffic_forward(__u16 vip, __u16 server, __u32 bytes, __u8 new_flow)
{
	__u32 key;

	if (vip) {
		key = vip - 1;
		struct vip_traffic *t = bpf_map_lookup_elem(&mux_vip_traffic, &key);
		if (t) {
			t->packets += 1;
			t->bytes += bytes;
			t->new_flows += new_flow;
		}
	}
	if (server) {
		key = server - 1;
		struct server_traffic *s = bpf_map_lookup_elem(&mux_server_traffic, &key);
		if (s) {
			s->packets += 1;
			s->bytes += bytes;
		}
	}
}

#endif
