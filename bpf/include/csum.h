/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The IPv4 header checksum, computed in full: our headers are at most 36
 * bytes, so an unrolled sum is cheaper than a helper call. */
#ifndef BEAMER_CSUM_H
#define BEAMER_CSUM_H

#include "defs.h"

INLINE __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* words: header length in 16-bit words (10 or 18); check field must be 0. */
INLINE __u16 ipv4_header_csum(const void *hdr, const int words)
{
	const __u16 *w = hdr;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < words; i++)
		sum += w[i];
	return csum_fold32(sum);
}

#endif
