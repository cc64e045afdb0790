/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's drop, shared by both of its programs (mux.c: beamer_mux for
 * IPv4, beamer_mux6 for IPv6): a dropped packet is counted once, by
 * reason, and in the VIP's traffic counters (vip_traffic.h): every drop
 * names the VIP's counter slot, at hand where it is made.
 */
#ifndef BEAMER_MUX_VERDICT_H
#define BEAMER_MUX_VERDICT_H

#include "defs.h"
#include "parse.h"
#include "mux_maps.h"
#include "vip_traffic.h"

/* The drop reason of a parse verdict (parse.h), for both families. */
static const enum mux_counter parse_drop[PARSE_ICMP] = {
	[PARSE_TRUNCATED] = MUX_DROP_TRUNCATED,
	[PARSE_BAD_HEADER] = MUX_DROP_BAD_HEADER,
	[PARSE_IP_OPTIONS] = MUX_DROP_IP_OPTIONS,
	[PARSE_FRAGMENT] = MUX_DROP_FRAGMENT,
	[PARSE_NOT_TCP] = MUX_DROP_NOT_TCP, /* neither TCP, UDP nor ICMP */
	[PARSE_EXT_CHAIN] = MUX_DROP_EXT_HEADERS,
};

/* vip is the packet's VIP's counter slot + 1 (vip_info.stats). */
INLINE int drop(__u16 vip, enum mux_counter why)
{
	mux_count(why);
	vip_traffic_drop(vip, why);
	return XDP_DROP;
}

#endif
