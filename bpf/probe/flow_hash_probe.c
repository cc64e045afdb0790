// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test probe: runs the data path's flow hash (include/flow_hash.h) on a
 * tuple given as packet data and writes the hash and bucket back, so tests
 * can check the C hash against testdata/vectors.json directly.
 */
#include "../include/defs.h"
#include "../include/flow_hash.h"

struct probe {
	__be32 saddr, daddr;
	__be16 sport, dport;
	__u32 proto;
	__u32 buckets;
	__u32 hash;   /* out */
	__u32 bucket; /* out */
};

SEC("xdp")
int flow_hash_probe(struct xdp_md *ctx)
{
	struct probe *p = (void *)(long)ctx->data;

	if ((void *)(p + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	p->hash = flow_hash(p->saddr, p->daddr, p->sport, p->dport, p->proto);
	p->bucket = bucket_of(p->hash, p->buckets);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
