/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Included by agent.c in its benchmark build only (-DBEAMER_BENCH). */
#ifndef BEAMER_CHEETAH_AGENT_BENCH_H
#define BEAMER_CHEETAH_AGENT_BENCH_H

/*
 * Cheetah's server-side rewrites under BPF_PROG_TEST_RUN with repeat: each
 * wrapper puts back what the program changed (the timestamp and the TCP
 * checksum, and for the ingress the outer header) so every repetition does
 * the full rewrite; the restore is part of what is measured.
 */

/* Ethernet, IPv4 and a TCP header with 12 bytes of options (NOP NOP TS). */
#define CHEETAH_BENCH_HDRS (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct tcphdr) + 12)

SEC("tc")
int cheetah_egress_bench(struct __sk_buff *skb)
{
	__u8 saved[CHEETAH_BENCH_HDRS];

	if (bpf_skb_load_bytes(skb, 0, saved, sizeof(saved)))
		return TC_ACT_SHOT;
	int action = cheetah_egress(skb);
	bpf_skb_store_bytes(skb, 0, saved, sizeof(saved), 0);
	return action;
}

/* The agent on an encapsulated segment (20-byte outer header, no option)
 * whose echo the ingress rewrites before the stack. */
SEC("tc")
int cheetah_ingress_bench(struct __sk_buff *skb)
{
	__u8 saved[CHEETAH_BENCH_HDRS + OUTER_LEN_PLAIN];
	__u32 len = skb->len;

	if (bpf_skb_load_bytes(skb, 0, saved, sizeof(saved)))
		return TC_ACT_SHOT;
	int action = beamer_agent(skb);
	if (skb->len < len && bpf_skb_adjust_room(skb, OUTER_LEN_PLAIN, BPF_ADJ_ROOM_MAC, 0))
		return TC_ACT_SHOT;
	bpf_skb_store_bytes(skb, 0, saved, sizeof(saved), 0);
	return action;
}

#endif
