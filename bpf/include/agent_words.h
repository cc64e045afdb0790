/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet fields read and written whole on the agent's fast paths (issue
 * 27). struct ethhdr and struct beamer_opt are packed (alignment 1), so
 * clang reads and writes their fields byte by byte: 14 loads and 14
 * stores to move an Ethernet header, 8 loads and 6 shifts and ors to read
 * an option's (incarnation, generation). The kernel lets a program read
 * and write packet data at any alignment where the CPU does so cheaply
 * (the verifier is strict only under BPF_F_STRICT_ALIGNMENT or without
 * CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS; x86-64 and arm64 have it), as
 * every IPv4 header field the programs read already is (an IP header
 * after 14 bytes of Ethernet is 2-byte aligned). These types tell clang
 * to make one access of the word's size instead.
 */
#ifndef BEAMER_AGENT_WORDS_H
#define BEAMER_AGENT_WORDS_H

#include "defs.h"

typedef __u16 __attribute__((aligned(2), may_alias)) pkt_u16;
typedef __u32 __attribute__((aligned(4), may_alias)) pkt_u32;
typedef __u64 __attribute__((aligned(8), may_alias)) pkt_u64;

INLINE __u32 pkt_load32(const void *p)
{
	return *(const pkt_u32 *)p;
}

INLINE __u64 pkt_load64(const void *p)
{
	return *(const pkt_u64 *)p;
}

/*
 * An option's (incarnation, generation) as one number, incarnation in the
 * high word (agent_epoch.h): one 8-byte load of the two big-endian words
 * (generation first on the wire), swapped whole and its halves exchanged.
 */
INLINE __u64 opt_epoch(const void *generation_field)
{
	__u64 swapped = __builtin_bswap64(pkt_load64(generation_field)); /* generation << 32 | incarnation */

	return swapped << 32 | swapped >> 32;
}

/*
 * Strips outer_len bytes after the Ethernet header in XDP: the Ethernet
 * header moves forward over them, its MAC addresses held in two registers
 * across bpf_xdp_adjust_head and written back whole, its EtherType written
 * as proto (network order: the inner packet's family, the outer's in every
 * case the agent decapsulates). 0 done; 1 not done (no Ethernet header,
 * or the kernel refused: the packet is unchanged); -1 stripped but no
 * Ethernet header after (cannot happen: the caller saw the inner headers).
 */
/* xdp_strip_outer for a caller that has read the MAC addresses already
 * (macs: the first 8 bytes, macs_tail the next 4). */
INLINE int xdp_strip_outer_macs(struct xdp_md *ctx, int outer_len, __be16 proto, __u64 macs, __u32 macs_tail)
{
	if (bpf_xdp_adjust_head(ctx, outer_len))
		return 1;
	void *data = (void *)(long)ctx->data;
	if (data + sizeof(struct ethhdr) > (void *)(long)ctx->data_end)
		return -1;
	*(pkt_u64 *)data = macs;
	*(pkt_u32 *)(data + 8) = macs_tail;
	*(pkt_u16 *)(data + 12) = proto;
	return 0;
}

INLINE int xdp_strip_outer(struct xdp_md *ctx, int outer_len, __be16 proto)
{
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(struct ethhdr) > (void *)(long)ctx->data_end)
		return 1;
	return xdp_strip_outer_macs(ctx, outer_len, proto, pkt_load64(data), pkt_load32(data + 8));
}

#endif
