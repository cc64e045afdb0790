// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test probe: runs AWFD's Algorithm 1 (strategy/awfd_select.h) on the
 * record in map `record` for a hash given as packet data, and writes the
 * class and server back, so tests can check the C selection against
 * testdata/awfd-vectors.json directly.
 */
#include "../include/defs.h"
#include "../strategy/awfd_select.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct awfd_record);
} record SEC(".maps");

struct probe {
	__u32 hash;
	__s32 class;  /* out */
	__u32 server; /* out */
};

SEC("xdp")
int awfd_probe(struct xdp_md *ctx)
{
	struct probe *p = (void *)(long)ctx->data;
	__u32 zero = 0;
	int k;

	if ((void *)(p + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	struct awfd_record *r = bpf_map_lookup_elem(&record, &zero);
	if (!r)
		return XDP_ABORTED;
	p->server = awfd_pick(r, p->hash, &k);
	p->class = k;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
