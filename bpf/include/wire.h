/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Beamer encapsulation, as specified in docs/wire-format.md:
 * outer IPv4 (protocol 4, IP-in-IP) towards the server, carrying for packets
 * to service ports an IP option of 16 + 4n bytes: hop count, the mux's
 * generation and incarnation, the time the bucket last changed owner and the
 * bucket's n previous owners, most recent first (n = 0 for a bucket that
 * never moved). Packets to MPTCP server-id ports (the instance's server-id
 * range) and QUIC packets routed by connection id carry no option.
 */
#ifndef BEAMER_WIRE_H
#define BEAMER_WIRE_H

#include "defs.h"
#include "limits.h"

/* RFC 4727 experimental IP option: copy flag 1, class 0, number 30. The copy
 * flag keeps the option on every fragment should a router fragment us. */
#define BEAMER_OPT_TYPE 0x9e
#define BEAMER_OPT_FIXED 16
#define BEAMER_OPT_MAX (BEAMER_OPT_FIXED + 4 * BEAMER_MAX_CHAIN) /* 40: all of IPv4's option room */

struct beamer_opt {
	__u8 type;
	__u8 len;          /* 16 + 4n */
	__u8 hop;          /* times daisy-chained so far; 0 from the mux */
	__u8 flags;        /* BEAMER_OPT_F_*; other bits 0 */
	__be32 generation; /* of the mux's forwarding state */
	__be32 incarnation;/* of the instance's ring (Unix s when it began) */
	__be32 changed;    /* Unix seconds of the bucket's latest change, 0 if n = 0 */
	__be32 prev[BEAMER_MAX_CHAIN]; /* previous owners, only the first n present */
} __attribute__((packed));

/* UDP: the last of prev[] is the bucket's current owner, so that a packet
 * no previous owner holds in a connected socket comes back to it (a new
 * flow, or one of an unconnected socket); see docs/wire-format.md, "UDP". */
#define BEAMER_OPT_F_RETURN 0x01

_Static_assert(sizeof(struct beamer_opt) == BEAMER_OPT_MAX, "option is at most 40 bytes");

#define OUTER_LEN_PLAIN ((int)sizeof(struct iphdr))
#define OUTER_LEN_OPT ((int)sizeof(struct iphdr) + BEAMER_OPT_FIXED) /* option naming no previous owner */
#define OUTER_LEN_MAX ((int)sizeof(struct iphdr) + BEAMER_OPT_MAX)   /* IHL 15 */
#define OUTER_LEN_WITH(n) (OUTER_LEN_OPT + 4 * (n))

#define BEAMER_OUTER_TTL 64

#endif
