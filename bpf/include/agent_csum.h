/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The outer IPv4 header's checksum check on the agent's fast paths (issue
 * 27). The headers a mux sends have one of two lengths: 36 bytes (IP-in-IP
 * with the 16-byte Beamer option, IHL 9) or 20 (GUE, or IP-in-IP without
 * the option). For those it sums 32-bit words into a 64-bit sum — 9 or 5
 * loads, no per-word bound check — which folds to the same 16-bit ones'
 * complement sum as the 16-bit words (2^16 ≡ 1 modulo 2^16 − 1). Any other
 * length takes ipv4_csum_wrong (csum.h), word by word.
 *
 * The sum of the words is right when its 16-bit ones' complement fold is
 * 0xffff, that is when the 64-bit sum is a multiple of 65535 (it is never
 * 0: the version byte is in it). Rather than folding (some ten dependent
 * instructions), a multiple of the odd 65535 is told by one multiplication
 * with 65535's inverse modulo 2^64: the product of a multiple is its
 * quotient, at most (2^64 - 1) / 65535; that of any other number is larger
 * (the classic divisibility test by an odd constant).
 */
#ifndef BEAMER_AGENT_CSUM_H
#define BEAMER_AGENT_CSUM_H

#include "csum.h"

#define CSUM_65535_INVERSE 0xfffefffefffeffffULL
#define CSUM_65535_QUOTIENT_MAX 0x1000100010001ULL

/* Is sum, of 32-bit header words, not that of a right IPv4 header? */
INLINE int csum_words_wrong(__u64 sum)
{
	return sum * CSUM_65535_INVERSE > CSUM_65535_QUOTIENT_MAX;
}

INLINE int outer_csum_wrong(const struct iphdr *ip, void *data_end)
{
	const __u32 *w = (const void *)ip;
	__u64 sum = 0;

	if (ip->ihl == 9 && (void *)(w + 9) <= data_end) {
#pragma unroll
		for (int i = 0; i < 9; i++)
			sum += w[i];
		return csum_words_wrong(sum);
	}
	if (ip->ihl == 5 && (void *)(w + 5) <= data_end) {
#pragma unroll
		for (int i = 0; i < 5; i++)
			sum += w[i];
		return csum_words_wrong(sum);
	}
	return ipv4_csum_wrong(ip, data_end);
}

#endif
