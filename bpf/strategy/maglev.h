/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy maglev (Maglev §3.3–3.4): the Maglev lookup table (the bucket
 * array, B = M prime) and the connection table (conntrack.h).
 */
#ifndef BEAMER_STRATEGY_MAGLEV_H
#define BEAMER_STRATEGY_MAGLEV_H

#include "../include/decision.h"
#include "../include/conntrack.h"
#ifdef BEAMER_BENCH
#include "../bench/conntrack_lru_bench.h"
#endif

/*
 * Maglev with connection tracking: a known connection goes to the server
 * remembered for it while that server is healthy — active, or retired and
 * draining its connections; a new one (a miss, or any SYN) goes to the
 * Maglev table's entry for its hash and is remembered,
 * unless the flood guard says this CPU has inserted enough this second.
 * A connection the table evicted (conntrack.h) is a miss: the Maglev
 * table's entry, as without a connection table.
 * No option: servers of a Maglev VIP do not daisy-chain.
 */
INLINE int decide_maglev(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
#ifdef BEAMER_BENCH
	if (bench_ct_lru) /* the benchmark's reference: the LRU table of before (bpf/bench) */
		return decide_maglev_lru(vip, servers, f, d);
#endif
	struct ct_key key;
	ct_key_of(f, &key);
	struct ct_bucket *b = ct_bucket(&key);
	int syn = flow_is_syn(f);
	int verdict = syn ? MUX_CT_SYN : MUX_CT_MISS;

	d->with_opt = 0;
	if (b && !syn) {
		struct ct_slot *s = NULL;
		__u16 id = ct_find(b, &key, &s);
		if (id && s) {
			__u64 w = server_word(servers, id);
			if (w && SERVER_STATE(w) != SERVER_DOWN) {
				ct_touch(s);
				decision_to(d, w);
				d->forward = 1;
				return MUX_CT_HIT;
			}
			verdict = MUX_CT_STALE;
		}
	}

	int why;
	__u64 entry = bucket_word(vip, f, &why);
	__u16 current = BUCKET_CURRENT(entry);
	if (!current)
		return why;
	__u64 w = server_word(servers, current);
	if (!w)
		return MUX_DROP_UNKNOWN_SERVER;
	if (b) {
		if (flood_allows_insert())
			ct_insert(b, &key, current);
		else
			mux_count(MUX_CT_FLOOD);
	}
	decision_to(d, w);
	d->forward = 1;
	return verdict;
}

#endif
