/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Cheetah cookie (docs/strategy-cheetah.md), shared by the mux strategy
 * (bpf/strategy/cheetah.h, decode) and the server agent (bpf/strategy/
 * cheetah_agent.h, encode), and by the Go model (pkg/strategy/cheetah), all checked
 * against testdata/cheetah-vectors.json.
 *
 * cookie (16 bits) = kid << 15 | ((id ^ mask) & 0x7fff)
 *   id    the server's slot in the instance's server table (1..32767),
 *   kid   which of the instance's two keys made it (key rotation),
 *   mask  a keyed hash of the connection's 4-tuple: lookup3's final mix over
 *         (client ^ k0, vip ^ k1, cport << 16 | vport ^ k2) seeded with k3,
 *         all host-order, always in the client -> VIP direction.
 * A client that does not know the key cannot say which cookie names a given
 * server on a new 4-tuple (obfuscation, not cryptography: see the doc).
 *
 * The cookie lives in the server's TSval, so the client echoes it in TSecr:
 *
 *   bit 31..23  the server's own TSval bits 31..23 (a clock ticking every
 *               2^23 ms = 2.3 h: the client's PAWS sees a clock that never
 *               goes back, see cheetah_agent.h)
 *   bit 22..7   the cookie
 *   bit 6       0 on a SYN-ACK, 1 on every other segment
 *   bit 5..0    a SYN-ACK's own low 6 bits (where Linux keeps the SYN-cookie
 *               options); 63 on every other segment
 */
#ifndef BEAMER_CHEETAH_COOKIE_H
#define BEAMER_CHEETAH_COOKIE_H

#include "defs.h"
#include "flow_hash.h"

#define CHEETAH_ID_BITS 15
#define CHEETAH_ID_MASK 0x7fff
#define CHEETAH_MAX_ID CHEETAH_ID_MASK

#define TS_COOKIE_SHIFT 7
#define TS_NOT_SYNACK 0x40u    /* bit 6 */
#define TS_SYNCOOKIE_BITS 0x3fu /* bits 5..0 */
#define TS_CLOCK_BITS 0xff800000u

struct cheetah_key {
	__u32 k[4];
};

/* Host-order 4-tuple words in the client -> VIP direction. */
INLINE __u32 cheetah_mask(const struct cheetah_key *key, __be32 client, __be32 vip, __be16 cport, __be16 vport)
{
	__u32 ports = ((__u32)bpf_ntohs(cport) << 16) | bpf_ntohs(vport);

	return jhash_3words(bpf_ntohl(client) ^ key->k[0], bpf_ntohl(vip) ^ key->k[1], ports ^ key->k[2], key->k[3]);
}

INLINE __u16 cheetah_cookie(__u16 id, __u32 kid, __u32 mask)
{
	return (__u16)(((kid & 1) << CHEETAH_ID_BITS) | ((id ^ mask) & CHEETAH_ID_MASK));
}

/* The cookie a TSecr carries, and its key id. */
INLINE __u16 ts_cookie(__u32 tsecr)
{
	return (__u16)(tsecr >> TS_COOKIE_SHIFT);
}

INLINE __u32 cookie_kid(__u16 cookie)
{
	return cookie >> CHEETAH_ID_BITS;
}

INLINE __u16 cookie_id(__u16 cookie, __u32 mask)
{
	return (cookie ^ mask) & CHEETAH_ID_MASK;
}

/* The TSval the client sees for the server's tsval (host order). */
INLINE __u32 ts_with_cookie(__u32 tsval, __u16 cookie, int synack)
{
	__u32 low = synack ? (tsval & TS_SYNCOOKIE_BITS) : (TS_NOT_SYNACK | TS_SYNCOOKIE_BITS);

	return (tsval & TS_CLOCK_BITS) | ((__u32)cookie << TS_COOKIE_SHIFT) | low;
}

#endif
