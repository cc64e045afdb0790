/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by mux.c in its benchmark build only (-DBEAMER_BENCH). */
#ifndef BEAMER_MUX_BENCH_H
#define BEAMER_MUX_BENCH_H

/*
 * Benchmark build only (pkg/dpbench, pkg/dataplane's benchmarks).
 * BPF_PROG_TEST_RUN with repeat runs a program again on the packet as the
 * previous run left it, so the wrapper undoes the encapsulation after each
 * forwarded packet — shrinking the head back and restoring the Ethernet
 * header — and every repetition takes the full path on the original packet.
 * When bench_flows is set, it also gives each repetition another connection
 * (source address and port from a sequence over bench_flows flows), so that
 * tables are looked up all over, as under real traffic. The undo and the
 * rotation are part of what is measured.
 */
__u32 bench_flows;
__u32 bench_seq;

INLINE void rotate_flow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct tcphdr *tcp = (void *)(ip + 1);

	if (!bench_flows || (void *)(tcp + 1) > data_end)
		return;
	__u32 i = bench_seq++;
	if (i >= bench_flows)
		i = bench_seq = 0, bench_seq++;
	ip->saddr = bpf_htonl(0xc6130000 | (i >> 14));		/* 198.19.x.y */
	tcp->source = bpf_htons(1024 + (i & 0x3fff));
}

/* Copies the Ethernet header before the program under test runs. */
INLINE int save_eth(struct xdp_md *ctx, struct ethhdr *saved)
{
	void *data = (void *)(long)ctx->data;

	if (data + sizeof(*saved) > (void *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(saved, data, sizeof(*saved));
	return 0;
}

/* Strips the outer header the packet now carries and puts the saved
 * Ethernet header back: the packet is as it came in. Returns action. */
INLINE int undo_encap(struct xdp_md *ctx, const struct ethhdr *saved, int action)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *outer = data + sizeof(struct ethhdr);

	if ((void *)(outer + 1) > data_end)
		return XDP_ABORTED;
	int outer_len = outer->ihl * 4; /* 20, or 36-60 with the option */
	if (bpf_xdp_adjust_head(ctx, outer_len))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	if (data + sizeof(*saved) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, saved, sizeof(*saved));
	return action;
}

SEC("xdp")
int beamer_mux_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	rotate_flow(ctx);
	int action = beamer_mux(ctx);
	if (action != XDP_TX && action != XDP_REDIRECT)
		return action;
	return undo_encap(ctx, &saved, action);
}

/* The floor of XDP forwarding: swap the MACs and send the frame back. */
SEC("xdp")
int floor_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
	return XDP_TX;
}

/*
 * The floor of encapsulation: grow the head by the outer header with the
 * option, write fixed Ethernet and outer headers, send, and undo as
 * beamer_mux_bench does. What any IP-in-IP mux pays before deciding anything.
 */
SEC("xdp")
int encap_floor_bench(struct xdp_md *ctx)
{
	struct ethhdr saved;

	if (save_eth(ctx, &saved))
		return XDP_ABORTED;
	struct encap_params p = {.saddr = mux_addr, .daddr = bpf_htonl(0xc612000a)};
	p.opt.type = BEAMER_OPT_TYPE;
	p.opt.len = BEAMER_OPT_FIXED;
	struct ethhdr *eth = xdp_encap_ipv4(ctx, &p, OUTER_LEN_OPT);
	if (!eth)
		return XDP_ABORTED;
	__builtin_memcpy(eth->h_dest, saved.h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, saved.h_dest, ETH_ALEN);
	return undo_encap(ctx, &saved, XDP_TX);
}

/*
 * Traffic generator for the live benchmark: run in live-frames test mode on
 * the generator's interface, it sends a minimum-size frame out again and
 * again, each time as another of bench_flows connections. It writes the
 * whole frame from gen_frame every time: live-frames mode recycles pages
 * without restoring them, and the mux downstream rewrote them.
 */
#define GEN_FRAME_LEN 60
__u8 gen_frame[GEN_FRAME_LEN];

SEC("xdp")
int traffic_gen_bench(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + GEN_FRAME_LEN > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, gen_frame, GEN_FRAME_LEN);
	rotate_flow(ctx);
	return XDP_TX;
}

/* An empty program: what a test run costs by itself. */
SEC("xdp")
int empty_bench(struct xdp_md *ctx)
{
	return XDP_TX;
}

#endif
