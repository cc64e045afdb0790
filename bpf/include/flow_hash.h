/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The flow hash, identical to pkg/wire's Go version and checked against
 * testdata/flow-hash.json by both.
 *
 * Bob Jenkins' lookup3 final mix over three 32-bit words: the source address,
 * the destination address and (source port << 16 | destination port), all as
 * host-order numbers, seeded with the IP protocol. The whole 5-tuple is hashed
 * so that the connections of one client spread over buckets by port.
 * The bucket is chosen by multiply-shift (hash * B) >> 32, which maps the hash
 * onto 0..B-1 as evenly as hash % B but without a division on the fast path.
 */
#ifndef BEAMER_FLOW_HASH_H
#define BEAMER_FLOW_HASH_H

#include "defs.h"

#define JHASH_INITVAL 0xdeadbeef

INLINE __u32 rol32(__u32 word, unsigned int shift)
{
	return (word << shift) | (word >> ((-shift) & 31));
}

INLINE __u32 jhash_3words(__u32 a, __u32 b, __u32 c, __u32 initval)
{
	initval += JHASH_INITVAL + (3 << 2);
	a += initval;
	b += initval;
	c += initval;
	/* lookup3 final() */
	c ^= b; c -= rol32(b, 14);
	a ^= c; a -= rol32(c, 11);
	b ^= a; b -= rol32(a, 25);
	c ^= b; c -= rol32(b, 16);
	a ^= c; a -= rol32(c, 4);
	b ^= a; b -= rol32(a, 14);
	c ^= b; c -= rol32(b, 24);
	return c;
}

/* Addresses as they sit in the packet (network order); ports the source
 * port << 16 | the destination port (host order): the packet's 32-bit
 * ports word, byte-swapped (the mux's fast path, mux_fast.h, loads it so). */
INLINE __u32 flow_hash_ports(__be32 saddr, __be32 daddr, __u32 ports, __u8 proto)
{
	return jhash_3words(bpf_ntohl(saddr), bpf_ntohl(daddr), ports, proto);
}

/* Addresses and ports as they sit in the packet (network order). */
INLINE __u32 flow_hash(__be32 saddr, __be32 daddr, __be16 sport, __be16 dport, __u8 proto)
{
	return flow_hash_ports(saddr, daddr, ((__u32)bpf_ntohs(sport) << 16) | bpf_ntohs(dport), proto);
}

INLINE __u32 bucket_of(__u32 hash, __u32 buckets)
{
	return (__u32)(((__u64)hash * buckets) >> 32);
}

#endif
