/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The outer IPv4 header's checksum check on the agent's fast paths (issue
 * 27). The headers a mux sends have one of two lengths: 36 bytes (IP-in-IP
 * with the 16-byte Beamer option, IHL 9) or 20 (GUE, or IP-in-IP without
 * the option). For those it sums 32-bit words into a 64-bit sum — 9 or 5
 * loads, no per-word bound check — which folds to the same 16-bit ones'
 * complement sum as the 16-bit words (2^16 ≡ 1 modulo 2^16 − 1). Any other
 * length takes ipv4_csum_wrong (csum.h), word by word.
 */
#ifndef BEAMER_AGENT_CSUM_H
#define BEAMER_AGENT_CSUM_H

#include "csum.h"

INLINE int outer_csum_wrong(const struct iphdr *ip, void *data_end)
{
	const __u32 *w = (const void *)ip;
	__u64 sum = 0;

	if (ip->ihl == 9 && (void *)(w + 9) <= data_end) {
#pragma unroll
		for (int i = 0; i < 9; i++)
			sum += w[i];
		return csum_fold64(sum) != 0;
	}
	if (ip->ihl == 5 && (void *)(w + 5) <= data_end) {
#pragma unroll
		for (int i = 0; i < 5; i++)
			sum += w[i];
		return csum_fold64(sum) != 0;
	}
	return ipv4_csum_wrong(ip, data_end);
}

#endif
