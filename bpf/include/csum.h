/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internet checksums (RFC 1071). The IPv4 header's is computed in full: our
 * headers are at most 60 bytes, so an unrolled sum is cheaper than a helper
 * call. Verifying one sums the bytes with the checksum field as it came:
 * a right checksum folds to 0. Sums are of 16-bit words in memory order,
 * which is what the checksum field holds in memory order too (RFC 1071,
 * "byte order independence"). */
#ifndef BEAMER_CSUM_H
#define BEAMER_CSUM_H

#include "defs.h"
#include "limits.h"

INLINE __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

INLINE __u16 csum_fold64(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return csum_fold32((__u32)sum);
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

/* Is an IPv4 header's checksum wrong (issue 23)? Sums its IHL * 4 bytes,
 * the first 20 known present (the caller checked ip + 1 <= data_end). A
 * header shorter than 20 bytes or ending past data_end is not judged here
 * (0): the parser drops it for what it is. */
INLINE int ipv4_csum_wrong(const struct iphdr *ip, void *data_end)
{
	const __u16 *w = (const void *)ip;
	__u32 words = ip->ihl * 2, sum = 0;

	if (words < 10)
		return 0;
#pragma unroll
	for (int i = 0; i < 30; i++) {
		if (i >= 10 && i >= words)
			break;
		if (i >= 10 && (void *)(w + i + 1) > data_end)
			return 0;
		sum += w[i];
	}
	return csum_fold32(sum) != 0;
}

/* CSUM_MAX_BYTES (limits.h): ICMP echo requests and GUE packets with a
 * nonzero UDP checksum longer than it are refused as unverifiable (neither
 * a mux nor an agent sends such GUE: theirs carry 0). */

/* Adds the len bytes at p, a packet pointer, to sum: 32-bit words, then a
 * 16-bit word and a last byte padded with zero. -1 when they go past
 * data_end or beyond CSUM_MAX_BYTES. Not the fast path: only echo requests
 * answered and GUE with a nonzero UDP checksum come here. */
INLINE __s64 csum_add_bytes(const void *p, void *data_end, __u32 len, __u64 sum)
{
	if (len > CSUM_MAX_BYTES)
		return -1;
#pragma clang loop unroll(disable)
	for (int i = 0; i < CSUM_MAX_BYTES / 4; i++) {
		if (len < 4)
			break;
		/* Opaque to the optimiser, which would otherwise rewrite the
		 * bound check into arithmetic on data_end (the verifier
		 * refuses that). */
		asm volatile("" : "+r"(p));
		if (p + 4 > data_end)
			return -1;
		sum += *(const __u32 *)p;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		if (p + 2 > data_end)
			return -1;
		sum += *(const __u16 *)p;
		p += 2;
		len -= 2;
	}
	if (len) {
		if (p + 1 > data_end)
			return -1;
		sum += *(const __u8 *)p;
	}
	return (__s64)sum;
}

/* The sum of an address of n 32-bit words, for a pseudo-header. */
INLINE __u64 csum_addr(const __be32 *a, const int n)
{
	__u64 sum = 0;

#pragma unroll
	for (int i = 0; i < n; i++)
		sum += a[i];
	return sum;
}

#endif
