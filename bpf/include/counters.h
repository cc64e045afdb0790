/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Decision counters: each program has a per-CPU array of one element, an
 * array of u64 indexed by its counter enum (the Go side names them from the
 * enum in BTF and reads every counter of every CPU in one lookup).
 *
 * One element rather than one per counter: a per-CPU array keeps a pointer
 * per element and allocates each element's per-CPU copies apart, so a
 * packet that counts its verdict, a sub-verdict and its encapsulation used
 * to touch three pointers and three scattered per-CPU words. Now it touches
 * one pointer and the counters of one contiguous block, the forwarding ones
 * in its first cache line (issue 18). The lookup of key 0 is inlined by the
 * verifier into a few instructions without a helper call.
 */
#ifndef BEAMER_COUNTERS_H
#define BEAMER_COUNTERS_H

#include "defs.h"

#define DECLARE_COUNTERS(name, count)                    \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, 1);                  \
		__type(key, __u32);                      \
		__type(value, __u64[count]);             \
	} name SEC(".maps")

/* counters is the map declared with DECLARE_COUNTERS with max counters;
 * c beyond them is not counted (the bound also tells the verifier). */
INLINE void count_in(void *counters, const __u32 max, __u32 c)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(counters, &zero);

	if (v && c < max)
		v[c] += 1;
}

#endif
