/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Decision counters: each program has a per-CPU array with one u64 per value
 * of its counter enum (the Go side names them from the enum in BTF). A
 * per-CPU array element is a plain increment, and the verifier inlines the
 * lookup.
 */
#ifndef BEAMER_COUNTERS_H
#define BEAMER_COUNTERS_H

#include "defs.h"

#define DECLARE_COUNTERS(name, count)                    \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, count);              \
		__type(key, __u32);                      \
		__type(value, __u64);                    \
	} name SEC(".maps")

/* counters is the map declared with DECLARE_COUNTERS. */
INLINE void count_in(void *counters, __u32 c)
{
	__u64 *v = bpf_map_lookup_elem(counters, &c);

	if (v)
		*v += 1;
}

#endif
