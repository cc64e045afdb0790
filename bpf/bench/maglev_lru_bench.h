/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by bench/mux_bench.h (benchmark build only). */
#ifndef BEAMER_MAGLEV_LRU_BENCH_H
#define BEAMER_MAGLEV_LRU_BENCH_H

/*
 * The mux with the Maglev strategy's former connection table (the LRU
 * hash of bench/conntrack_lru_bench.h) instead of the current one, for the
 * bench rows maglev-lru beside maglev: everything else is the same
 * program. maglev_lru_bench is beamer_mux_bench (rotation, undo);
 * maglev_lru_single is beamer_mux for the per-packet method.
 */
SEC("xdp")
int maglev_lru_bench(struct xdp_md *ctx)
{
	bench_ct_lru = 1;
	int action = beamer_mux_bench(ctx);
	bench_ct_lru = 0;
	return action;
}

SEC("xdp")
int maglev_lru_single(struct xdp_md *ctx)
{
	bench_ct_lru = 1;
	int action = beamer_mux(ctx);
	bench_ct_lru = 0;
	return action;
}

#endif
