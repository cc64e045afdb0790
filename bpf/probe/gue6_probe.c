// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test probe: runs xdp_encap_gue6 (include/gue.h, the IPv6-outer GUE
 * encapsulation the mux's IPv6 branch calls) on the frame it is given,
 * with the parameters the test sets in its globals, so that the bytes can
 * be checked against the Go model (pkg/wire EncapsulateGUE) before any
 * program depends on them (pkg/dataplane TestGUE6EncapProbe).
 */
#include "../include/defs.h"
#include "../include/gue.h"

struct encap6_params probe_params;
__u32 probe_outer_len; /* GUE6_LEN_PLAIN or GUE6_LEN_WITH(n) */
__u16 probe_sport;     /* host order */
__u16 probe_dport;

SEC("xdp")
int gue6_encap_probe(struct xdp_md *ctx)
{
	struct ethhdr *eth = xdp_encap_gue6(ctx, &probe_params, probe_outer_len, bpf_htons(probe_sport), bpf_htons(probe_dport));

	if (!eth)
		return XDP_ABORTED;
	__builtin_memset(eth->h_dest, 0, 2 * ETH_ALEN); /* the MACs are the next hop's business */
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
