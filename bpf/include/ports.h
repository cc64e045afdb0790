/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Which packets to a VIP the mux forwards, by protocol and port (issue 17):
 * its service port ranges (per protocol, per VIP) and, for TCP, the
 * instance's MPTCP server-id range. Everything else to the VIP is dropped
 * and counted (drop_closed_port): a VIP of any strategy exposes only what
 * its configuration names.
 *
 * Up to VIP_RECORD_RANGES ranges live in the VIP record itself, so the
 * common VIP costs no extra lookup; a VIP with more reads one 64-byte
 * port_sets entry (one more cache line), written before the record that
 * names it and rewritten only after no record names it (pkg/dataplane).
 */
#ifndef BEAMER_PORTS_H
#define BEAMER_PORTS_H

#include "defs.h"
#include "flow.h"
#include "mux_maps.h"

enum port_class {
	PORT_CLOSED = 0,
	PORT_SERVICE,
	PORT_SERVER_ID, /* TCP to the server-id range: an MPTCP subflow */
};

INLINE int in_range(struct port_range r, __u16 p)
{
	return p >= r.low && p <= r.high;
}

/* Is port p of the protocol (udp: 1 for UDP, 0 for TCP) among the ranges
 * the record holds? For a VIP with at most VIP_RECORD_RANGES ranges. */
INLINE int record_ranges_hold(const struct vip_info *vip, __u16 p, __u32 udp)
{
	__u32 n = vip->n_ranges;
	__u32 mask = vip->udp_mask;

#pragma unroll
	for (__u32 i = 0; i < VIP_RECORD_RANGES; i++)
		if (i < n && ((mask >> i) & 1) == udp && in_range(vip->ranges[i], p))
			return 1;
	return 0;
}

INLINE enum port_class port_class(const struct vip_info *vip, const struct flow *f)
{
	__u16 p = flow_dport(f);
	__u32 udp = f->proto == IPPROTO_UDP;
	__u32 n = vip->n_ranges;

	if (!udp && vip->id_low && p >= vip->id_low && p <= vip->id_high)
		return PORT_SERVER_ID;
	if (n <= VIP_RECORD_RANGES)
		return record_ranges_hold(vip, p, udp) ? PORT_SERVICE : PORT_CLOSED;
	__u32 key = vip->port_set;
	struct port_set *s = bpf_map_lookup_elem(&port_sets, &key);
	if (!s)
		return PORT_CLOSED;
	__u32 mask = s->udp_mask;
	n = s->n;
#pragma unroll
	for (__u32 i = 0; i < PORT_SET_RANGES; i++)
		if (i < n && ((mask >> i) & 1) == udp && in_range(s->r[i], p))
			return PORT_SERVICE;
	return PORT_CLOSED;
}

#endif
