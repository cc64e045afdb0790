/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Beamer encapsulation, as specified in docs/wire-format.md:
 * outer IPv4 (protocol 4, IP-in-IP) towards the server, carrying for packets
 * to service ports a 16-byte IP option with the bucket's previous server, the
 * time the bucket changed owner and the mux's generation. Packets to MPTCP
 * server-id ports (> 1024) carry no option.
 */
#ifndef BEAMER_WIRE_H
#define BEAMER_WIRE_H

#include "defs.h"

/* RFC 4727 experimental IP option: copy flag 1, class 0, number 30. The copy
 * flag keeps the option on every fragment should a router fragment us. */
#define BEAMER_OPT_TYPE 0x9e
#define BEAMER_OPT_LEN 16

/* The packet was already daisy-chained once: never chain it again. */
#define BEAMER_OPT_F_CHAINED 0x01

struct beamer_opt {
	__u8 type;
	__u8 len;
	__u8 flags;
	__u8 reserved;
	__be32 prev_dip;   /* previous owner of the bucket, 0 if none */
	__be32 changed;    /* Unix seconds of the ownership change, 0 if none */
	__be32 generation; /* generation of the mux's forwarding state */
} __attribute__((packed));

_Static_assert(sizeof(struct beamer_opt) == BEAMER_OPT_LEN, "option is 16 bytes");

#define OUTER_LEN_PLAIN ((int)sizeof(struct iphdr))
#define OUTER_LEN_OPT ((int)(sizeof(struct iphdr) + sizeof(struct beamer_opt)))

#define BEAMER_OUTER_TTL 64

#endif
