/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by mux.c in its benchmark build only (-DBEAMER_BENCH), after
 * bench/mux_bench.h. */
#ifndef BEAMER_MUX6_BENCH_H
#define BEAMER_MUX6_BENCH_H

/*
 * The IPv6 path's benchmark wrapper (research/bench/dpbench ipv6.go): as
 * beamer_mux_bench, it gives each repetition another flow (bench_flows,
 * bench_order: the source address's last word and the source port, as
 * research/bench/dpbench benchFlow6 mirrors) and undoes the GUE-over-IPv6
 * encapsulation after each forwarded packet, so every repetition takes the
 * whole path. It calls the IPv6 program directly, where production frames
 * reach it by the IPv4 path's tail call (that call is in the per-packet
 * figure, not in this one).
 */

INLINE void rotate_flow6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ipv6hdr *ip6 = data + sizeof(struct ethhdr);
	struct tcphdr *tcp = (void *)(ip6 + 1);

	if (!bench_flows || (void *)(tcp + 1) > data_end)
		return;
	__u32 seq = bench_seq++;
	if (seq >= bench_flows)
		seq = bench_seq = 0, bench_seq++;
	__u32 i = bench_order(seq, bench_flows);
	ip6->saddr.in6_u.u6_addr32[3] = bpf_htonl(i >> 14);
	tcp->source = bpf_htons(1024 + (i & 0x3fff));
}

/* Strips IPv6 + UDP + GUE + private data (mux_bench.h strip_outer). */
INLINE int undo_gue6(struct xdp_md *ctx, const struct ethhdr *saved, int action)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct guehdr *g = data + sizeof(struct ethhdr) + GUE6_LEN_PLAIN - sizeof(struct guehdr);

	if ((void *)(g + 1) > data_end)
		return XDP_ABORTED;
	return strip_outer(ctx, saved, GUE6_LEN_PLAIN + (g->hlen & GUE_HLEN_MASK) * 4, action);
}

SEC("xdp")
int beamer_mux6_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	rotate_flow6(ctx);
	int action = beamer_mux6(ctx);
	if (action != XDP_TX && action != XDP_REDIRECT)
		return action;
	return undo_gue6(ctx, &saved, action);
}

#endif
