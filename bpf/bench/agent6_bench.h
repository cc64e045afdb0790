/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by agent.c in its benchmark build only (-DBEAMER_BENCH). */
#ifndef BEAMER_AGENT6_BENCH_H
#define BEAMER_AGENT6_BENCH_H

/*
 * The agent's IPv6 path under repeated test runs (research/bench/dpbench agent6.go):
 * as beamer_agent_bench, the wrapper puts back the outer headers the
 * program stripped or rewrote, so every repetition takes the same path. It
 * calls the IPv6 program directly (production frames reach it by the IPv4
 * path's tail call, which the per-packet figure includes). The bench
 * frames carry at most one previous owner: 98 bytes are saved.
 */
#define AGENT6_BENCH_SAVED (sizeof(struct ethhdr) + GUE6_LEN_WITH(1))

SEC("tc")
int beamer_agent6_bench(struct __sk_buff *skb)
{
	__u8 saved[AGENT6_BENCH_SAVED];
	__u32 len = skb->len;

	if (bpf_skb_load_bytes(skb, 0, saved, sizeof(saved)))
		return TC_ACT_SHOT;
	int outer_len = GUE6_LEN_PLAIN + (saved[sizeof(struct ethhdr) + GUE6_LEN_PLAIN - 4] & GUE_HLEN_MASK) * 4;
	int action = beamer_agent6(skb);

	if (outer_len > GUE6_LEN_WITH(1))
		return TC_ACT_SHOT;
	if (skb->len < len && bpf_skb_adjust_room(skb, outer_len, BPF_ADJ_ROOM_MAC, 0))
		return TC_ACT_SHOT;
	bpf_skb_store_bytes(skb, 0, saved, sizeof(saved), 0);
	return action;
}

/* The XDP fast path's IPv6 twin (agent6_xdp.h) under repeated test runs:
 * the outer headers it stripped are put back. Called directly, as the tc
 * wrapper above calls its program. */
#define XDP6_BENCH_SAVED AGENT6_BENCH_SAVED

SEC("xdp")
int beamer_agent6_xdp_bench(struct xdp_md *ctx)
{
	__u8 saved[XDP6_BENCH_SAVED];
	void *data = (void *)(long)ctx->data;

	if (data + XDP6_BENCH_SAVED > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(saved, data, XDP6_BENCH_SAVED);
	__u32 len = ctx->data_end - ctx->data;
	int action = beamer_agent6_xdp(ctx);
	__u32 now = ctx->data_end - ctx->data;
	int grow = len > now ? (int)(len - now) : 0;
	if (grow > GUE6_LEN_MAX || (grow && bpf_xdp_adjust_head(ctx, -grow)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	if (data + XDP6_BENCH_SAVED > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	__builtin_memcpy(data, saved, XDP6_BENCH_SAVED);
	return action;
}

#endif
