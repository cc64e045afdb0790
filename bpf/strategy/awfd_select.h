/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * AWFD's class record and Algorithm 1 (Spotlight §III-B), without maps, so
 * that the mux (strategy/awfd.h) and the vector probe
 * (probe/awfd_probe.c) run the very same code. pkg/strategy/awfd's Record.Select is
 * the Go twin; testdata/awfd-vectors.json holds cases both must agree on.
 *
 * Stage I: pos = (hash * total) >> 32 picks the class k whose range
 * [upper[k-1], upper[k]) holds pos; class k (weight k+1) has
 * (k+1)·count[k] of the total, so it is chosen in proportion to its
 * members' summed weight. An empty class has an empty range.
 * Stage II: the hash times 2^32/φ (a Weyl step: the hashes of one class
 * are one contiguous range, which this spreads evenly again), then
 * multiply-shift onto the class's members.
 */
#ifndef BEAMER_AWFD_SELECT_H
#define BEAMER_AWFD_SELECT_H

#include "../include/defs.h"
#include "../include/limits.h"

#define AWFD_GOLDEN 0x9E3779B1u

/* One instance's record, as pkg/dataplane packs it (awfd_record.go). */
struct awfd_record {
	__u64 seq;      /* the controller's sequence (for the daemon; unused here) */
	__u32 total;    /* Σ weights = upper[classes-1]; 0: no class, use the table */
	__u8 classes;   /* m */
	__u8 pad[3];
	__u32 upper[AWFD_MAX_CLASSES]; /* exclusive end of class k's range */
	__u16 start[AWFD_MAX_CLASSES]; /* first member's index in servers */
	__u16 count[AWFD_MAX_CLASSES]; /* members */
	__u16 servers[AWFD_MAX_SERVERS];
};

_Static_assert(sizeof(struct awfd_record) == 16 + 64 + 32 + 32 + 2 * AWFD_MAX_SERVERS, "awfd record layout");

/* The class of hash (0-based), or -1 when the record has none. */
INLINE int awfd_class(const struct awfd_record *r, __u32 hash)
{
	__u32 total = r->total;
	__u32 m = r->classes;
	int k = -1;

	if (!total)
		return -1;
	__u32 pos = (__u32)(((__u64)hash * total) >> 32);
#pragma unroll
	for (int i = 0; i < AWFD_MAX_CLASSES; i++) {
		if (k < 0 && (__u32)i < m && pos < r->upper[i])
			k = i;
	}
	return k;
}

/* The server id Algorithm 1 picks for hash (0: none — no class, or a
 * record whose lists do not cover its ranges, which the loader refuses). */
INLINE __u16 awfd_pick(const struct awfd_record *r, __u32 hash, int *class_out)
{
	int k = awfd_class(r, hash);

	*class_out = k;
	if (k < 0)
		return 0;
	k &= AWFD_MAX_CLASSES - 1;
	__u32 n = r->count[k];
	if (!n)
		return 0;
	__u32 idx = r->start[k] + (__u32)(((__u64)(__u32)(hash * AWFD_GOLDEN) * n) >> 32);
	if (idx >= AWFD_MAX_SERVERS)
		return 0;
	return r->servers[idx];
}

#endif
