/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the agent is told at load time (pkg/dataplane AgentOptions): its own
 * addresses and the sanity bounds of agent.c's header comment. Both families
 * and both hooks (tc, XDP) read them (agent.c agent_path).
 */
#ifndef BEAMER_AGENT_CONFIG_H
#define BEAMER_AGENT_CONFIG_H

#include "defs.h"

/* This server's own address (its DIP). Set at load time. */
volatile const __be32 local_addr;
/* Sanity bounds, set at load time (pkg/dataplane AgentOptions). */
volatile const __u32 max_skew = 60;          /* seconds the controller's clock may lead ours */
volatile const __u32 max_gen_jump = 1 << 16; /* generations a mux may lead what we remember */

/* This server's own IPv6 address; all zero: none (IPv6 GUE is passed). */
volatile const __be32 local_addr6[4];

#endif
