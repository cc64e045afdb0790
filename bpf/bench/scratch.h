/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by mux.c in its benchmark build only (-DBEAMER_BENCH), before
 * the mux's own code, so that measuring builds can read it. */
#ifndef BEAMER_BENCH_SCRATCH_H
#define BEAMER_BENCH_SCRATCH_H

#include "../include/defs.h"

/*
 * Memory the benchmark owns, in a plain array whose lookups the verifier
 * turns into address arithmetic (no helper call, no map header read):
 *
 *   - lines_bench (mux_bench.c) reads bench_lines distinct cache lines of
 *     it per run: what each line a program touches costs, by method;
 *   - scripts/mux-stages.sh's "helpers" build reads an instance's bucket
 *     table (from word 0) and server table (the last SERVER_TABLE_SIZE
 *     words) from here instead of through bucket_tables and server_tables
 *     (research/bench/dpbench copies them in): what the helper calls into
 *     the inner maps cost against the same reads inlined;
 *   - the beamer-floor rows (mux_bench.c, beamer_minimal) read the same
 *     copies, and beamer_minimal_moved4_bench also the instance's chain
 *     table, copied after the bucket table (bench_min_chain_base).
 *
 * 16 MB: the largest bench table (1M buckets: 1.25M words) and a server
 * table (64K words) fit.
 */
#define BENCH_SCRATCH_WORDS (1 << 21)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BENCH_SCRATCH_WORDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} bench_scratch SEC(".maps");

#endif
