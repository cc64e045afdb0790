// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test probe: runs the data path's flow hash (include/flow_hash.h) on a
 * tuple given as packet data and writes the hash and bucket back, so tests
 * can check the C hash against testdata/vectors.json directly.
 */
#include "../include/defs.h"
#include "../include/flow_hash.h"
#include "../include/flow.h"

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


/* The IPv6 flow hash (include/flow.h): addresses folded, then the same
 * hash; checked against pkg/wire by TestFlowHash6Probe. */

struct probe6 {
	struct in6_addr saddr, daddr;
	__be16 sport, dport;
	__u32 proto;
	__u32 buckets;
	__u32 hash;   /* out */
	__u32 bucket; /* out */
};

SEC("xdp")
int flow6_hash_probe(struct xdp_md *ctx)
{
	struct probe6 *p = (void *)(long)ctx->data;

	if ((void *)(p + 1) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	struct flow f = {.saddr = addr6_fold(&p->saddr), .daddr = addr6_fold(&p->daddr), .sport = p->sport,
			 .dport = p->dport, .proto = (__u8)p->proto};
	p->hash = flow_hash_of(&f);
	p->bucket = bucket_of(p->hash, p->buckets);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
