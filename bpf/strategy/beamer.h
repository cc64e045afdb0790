/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy beamer (Beamer §4): stable hashing into buckets, the bucket's
 * previous owners in an IP option so servers daisy-chain connections they
 * do not know. Ports in the instance's server-id range are MPTCP secondary
 * subflows naming their server (decide_by_server_id, which mux.c calls for
 * every strategy).
 */
#ifndef BEAMER_STRATEGY_BEAMER_H
#define BEAMER_STRATEGY_BEAMER_H

#include "../include/decision.h"
#include "../include/wire.h"

/* MPTCP secondary subflow: the destination port names the server. Active
 * and retired servers both accept: a retired server still owns subflows of
 * its remaining connections. */
INLINE int decide_by_server_id(void *servers, __u16 port, struct decision *d)
{
	__u64 w = server_word(servers, port);

	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	decision_to(d, w);
	d->with_opt = 0;
	d->forward = 1;
	return MUX_FWD_SERVER_ID;
}

/* The previous owners of a moved bucket into the option: the chain entry
 * the bucket word names, each id turned into its server's address. The list
 * ends at the first id no longer in the server table (the table never names
 * one, see forwarding.Table.Validate; this is defence). Returns how many
 * were put. */
INLINE int put_history(__u32 table, void *servers, __u16 ref, struct beamer_opt *opt)
{
	void *chains = bpf_map_lookup_elem(&chain_tables, &table);
	__u32 key = ref;
	struct chain_entry *ce = chains ? bpf_map_lookup_elem(chains, &key) : NULL;
	int n = 0;

	if (!ce) {
		mux_count(MUX_CHAIN_MISSING);
		return 0;
	}
	__u8 len = ce->n;
#pragma unroll
	for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
		if (i < len && n == i) {
			__u64 w = server_word(servers, ce->ids[i]);
			if (w) {
				opt->prev[i] = SERVER_ADDR(w);
				n = i + 1;
			}
		}
	}
	return n;
}

/* Stable hashing: the bucket's current owner, with the bucket's previous
 * owners and the time of its latest change in the option. A bucket that
 * never moved reads nothing more than its 16-bit entry (mux_maps.h).
 * bucket is the packet's bucket word, or 0 with why the reason. */
INLINE int decide_by_bucket_word(const struct vip_info *vip, void *servers, const struct flow *f, __u64 bucket, int why,
				  struct decision *d)
{
	if (!bucket)
		return why;

	__u16 current = BUCKET_CURRENT(bucket);
	if (!current)
		return MUX_DROP_NO_OWNER;
	__u64 cur = server_word(servers, current);
	if (!cur)
		return MUX_DROP_UNKNOWN_SERVER;

	int n = 0;
	__u8 flags = 0;
	__u16 ref = BUCKET_CHAIN(bucket);
	if (ref)
		n = put_history(vip->table, servers, ref, &d->encap.opt);
	/* UDP has no SYN to tell a new flow: one that no previous owner
	 * holds in a connected socket must come back to the current owner,
	 * so it ends the list (the oldest owner gives way when it is full). */
	if (n && f->proto == IPPROTO_UDP) {
		if (n > BEAMER_MAX_CHAIN - 1)
			n = BEAMER_MAX_CHAIN - 1;
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++)
			if (i == n)
				d->encap.opt.prev[i] = SERVER_ADDR(cur);
		n++;
		flags = BEAMER_OPT_F_RETURN;
	}

	decision_to(d, cur);
	d->encap.opt.type = BEAMER_OPT_TYPE;
	d->encap.opt.len = BEAMER_OPT_FIXED + 4 * n;
	d->encap.opt.hop = 0;
	d->encap.opt.flags = flags;
	d->encap.opt.changed = n ? bpf_htonl(BUCKET_CHANGED(bucket)) : 0;
	d->with_opt = 1;
	d->prev = n;
	d->forward = 1;
	if (n)
		d->also = MUX_FWD_WITH_PREVIOUS;
	return MUX_FWD_BUCKET;
}

/* The same, from the bucket read here. (The mux's fast path, mux_fast.h,
 * reads the bucket itself and comes to decide_by_bucket_word with one that
 * moved or names no usable owner: *why says why there is none.) */
INLINE int decide_by_bucket(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	int why;
	__u64 bucket = bucket_word(vip, f, &why);

	return decide_by_bucket_word(vip, servers, f, bucket, why, d);
}

INLINE int decide_beamer(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	return decide_by_bucket(vip, servers, f, d);
}

#endif
