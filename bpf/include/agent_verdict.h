/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The tc program's drop, for both families (agent.c agent_path): a dropped
 * packet is counted once, by reason. The XDP fast path never drops: its
 * ctx_drop (agent_ctx.h) passes the packet on to tc.
 */
#ifndef BEAMER_AGENT_VERDICT_H
#define BEAMER_AGENT_VERDICT_H

#include "defs.h"
#include "parse.h"
#include "agent_maps.h"

static const enum agent_counter parse_drop[PARSE_ICMP] = {
	[PARSE_TRUNCATED] = AGENT_DROP_TRUNCATED,
	[PARSE_BAD_HEADER] = AGENT_DROP_BAD_HEADER,
	[PARSE_IP_OPTIONS] = AGENT_DROP_INNER_OPTIONS,
	[PARSE_FRAGMENT] = AGENT_DROP_FRAGMENT,
	[PARSE_NOT_TCP] = AGENT_DROP_NOT_TCP, /* neither TCP, UDP nor ICMP */
	[PARSE_EXT_CHAIN] = AGENT_DROP_EXT_HEADERS,
};

INLINE int drop(enum agent_counter why)
{
	agent_count(why);
	return TC_ACT_SHOT;
}

#endif
