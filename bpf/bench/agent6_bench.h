/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by agent.c in its benchmark build only (-DBEAMER_BENCH). */
#ifndef BEAMER_AGENT6_BENCH_H
#define BEAMER_AGENT6_BENCH_H

/*
 * The agent's IPv6 path under repeated test runs (pkg/dpbench agent6.go):
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

#endif
