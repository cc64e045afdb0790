/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * QUIC server-id routing (issue 17): under the instance's QUIC option the
 * mux reads a server id from the destination connection id (DCID) of a
 * UDP packet and sends the packet to that server, whatever the packet's
 * addresses and ports. A QUIC connection's packets carry the CIDs its
 * server issued, so they keep reaching it when the client migrates (new
 * address or port: another bucket) and when the bucket moves.
 *
 * The CID layout is the QUIC-LB draft's plaintext one with a 2-byte server
 * id (pkg/forwarding/quic.go, docs/wire-format.md "QUIC"):
 *
 *   byte 0: config rotation (3 high bits) | CID length - 1 (5 low bits)
 *   bytes 1-2: server id, big-endian
 *   bytes 3..cid_len-1: the server's nonce
 *
 * Long header (RFC 9000 §17.2): byte 0 has bit 7 set; version (4 bytes),
 * DCID length (1 byte), DCID. Short header (§17.3): byte 0 has bit 7
 * clear and the fixed bit 6 set; the DCID follows at once and its length
 * is not on the wire: it is the instance's cid_len.
 *
 * A packet whose DCID is not one of ours — a client's first Initial or
 * 0-RTT packets carry a DCID the client chose at random, and a CID of
 * another config rotation, of another length or naming an id the server
 * table lacks — returns 0 and goes by bucket like any UDP packet. A random
 * client DCID passes as ours only if its first byte matches (1 in 256) and
 * its id bytes name a loaded server; then every packet with that DCID goes
 * to that server, consistently, which is as good as its bucket.
 */
#ifndef BEAMER_QUIC_H
#define BEAMER_QUIC_H

#include "defs.h"
#include "flow.h"
#include "mux_maps.h"

#define QUIC_LONG 0x80
#define QUIC_FIXED 0x40
#define QUIC_LONG_DCID_OFF 6 /* byte 0, version, DCID length */

/* The server id in the DCID of the QUIC packet at q (the UDP payload), or
 * 0. */
INLINE __u16 quic_server_id_at(const struct vip_info *vip, __u8 *q, void *data_end)
{
	__u8 *cid;

	if ((void *)(q + QUIC_LONG_DCID_OFF + 3) > data_end)
		return 0;
	if (q[0] & QUIC_LONG) {
		/* Version 0 is version negotiation, which servers send. */
		if (!(q[1] | q[2] | q[3] | q[4]))
			return 0;
		if (q[5] != vip->quic_cid_len)
			return 0;
		cid = q + QUIC_LONG_DCID_OFF;
	} else {
		if (!(q[0] & QUIC_FIXED))
			return 0;
		cid = q + 1;
	}
	if (cid[0] != (__u8)(vip->quic_config << 5 | ((vip->quic_cid_len - 1) & 0x1f)))
		return 0;
	return (__u16)cid[1] << 8 | cid[2];
}

/* The server id in the packet's DCID, or 0. ip is the packet's IPv4
 * header (20 bytes, the flow's UDP header after it). */
INLINE __u16 quic_server_id(const struct vip_info *vip, struct iphdr *ip, void *data_end)
{
	return quic_server_id_at(vip, (__u8 *)(ip + 1) + sizeof(struct udphdr), data_end);
}

#endif
