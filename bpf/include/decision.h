/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What every strategy's decision shares: the decision it fills for the
 * mux's transmit path (bpf/mux.c) and the bucket word of a packet. Each
 * strategy's decision lives in its own header, bpf/strategy/NAME.h, as one
 * function
 *
 *   INLINE int decide_NAME(const struct vip_info *vip, void *servers,
 *                          const struct flow *f, struct decision *d);
 *
 * returning the verdict counter, with d->forward set when the packet is to
 * be sent; mux.c dispatches on vip->strategy once.
 */
#ifndef BEAMER_DECISION_H
#define BEAMER_DECISION_H

#include "defs.h"
#include "flow_hash.h"
#include "flow.h"
#include "encap.h"
#include "mux_maps.h"

/* What a strategy decided for one packet. */
struct decision {
	struct encap_params encap;
	int with_opt;
	int prev;    /* previous owners in the option */
	int forward; /* 1: encapsulate and send; 0: drop, the verdict says why */
	int also;    /* a detail counter counted with the verdict once sent (0: none) */
	__u16 stat;  /* the server's traffic counters (SERVER_STAT of its word) */
	__u16 vip_stat; /* the VIP's (vip_info.stats) */
	__u8 new_flow; /* a TCP SYN without ACK (bpf/include/vip_traffic.h) */
};

/* The packet goes to the server of word w: its address, and the slot of
 * its traffic counters. */
INLINE void decision_to(struct decision *d, __u64 w)
{
	d->encap.daddr = SERVER_ADDR(w);
	d->stat = SERVER_STAT(w);
}

/* The whole bucket of the packet (for Maglev: its table entry; mux_maps.h
 * bucket_at), or 0 with *why set: no table, or no owner. */
INLINE __u64 bucket_word_of_hash(const struct vip_info *vip, __u32 hash, int *why)
{
	__u32 table = vip->table;
	void *buckets = bpf_map_lookup_elem(&bucket_tables, &table);

	*why = MUX_DROP_NO_TABLE;
	if (!buckets)
		return 0;
	__u32 b = vip->buckets;
	*why = MUX_DROP_NO_OWNER;
	return bucket_at(buckets, b, bucket_of(hash, b));
}

/* The same from the flow (its hash computed here). */
INLINE __u64 bucket_word(const struct vip_info *vip, const struct flow *f, int *why)
{
	return bucket_word_of_hash(vip, flow_hash_of(f), why);
}

#endif
