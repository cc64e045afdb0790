/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy awfd (Spotlight, §III-B and §IV-A): new connections go to a
 * server chosen by Algorithm 1 over the instance's class record — classes
 * in proportion to their members' polled available capacity — and are
 * remembered in the connection table the Maglev strategy has
 * (conntrack.h), which keeps every later packet on its server (PCC) while
 * records change four times a second.
 *
 *   known 5-tuple, server not down    -> its server (awfd_ct_hit), SYNs
 *                                        included: a retransmitted SYN keeps
 *                                        the server of the first
 *   new (a miss)                      -> Algorithm 1 on the record
 *       no record yet / no class      -> the instance's Maglev table (equal
 *                                        shares), as a Maglev VIP would
 *       picked server not active      -> the Maglev table (the record is a
 *                                        poll old; the server table is the
 *                                        ring's word on who is up)
 *
 * A stale record is still a valid record: a mux that missed updates keeps
 * dispatching by the last one it has (Spotlight §IV-D5).
 *
 * PCC under mux churn: a mux that never saw a connection (it took over the
 * flow after ECMP changed, or restarted without its pinned table) places
 * the connection's next packet by the record it has now. That is the
 * original server only if the record still puts the hash there — the
 * paper's own limit (§IV-D3). Records are written only when the classes
 * change, which keeps that window as small as the load allows.
 */
#ifndef BEAMER_STRATEGY_AWFD_H
#define BEAMER_STRATEGY_AWFD_H

#include "../include/decision.h"
#include "../include/conntrack.h"
#include "awfd_select.h"

/* Table slot -> the instance's class record. A hash map without
 * preallocation: an update replaces the whole record under RCU, so a
 * packet never reads half of two records. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TABLES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct awfd_record);
} awfd_records SEC(".maps");

enum awfd_counter {
	AWFD_BY_CLASS = 0,     /* new connection placed by Algorithm 1 */
	AWFD_NO_RECORD,        /* new connection, no record loaded: Maglev table */
	AWFD_NO_CLASS,         /* new connection, record without class: Maglev table */
	AWFD_NOT_ACTIVE,       /* picked server not active in the server table: Maglev table */
	AWFD_CT_HIT,           /* known connection, to its server */
	AWFD_CT_STALE,         /* known connection whose server is down: placed again */
	AWFD_CT_FLOOD,         /* not remembered: new-connection cap reached */
	AWFD_COUNTER_MAX,
};

DECLARE_COUNTERS(awfd_counters, AWFD_COUNTER_MAX);

/* Keeps enum awfd_counter in the object's BTF, where the loader reads the
 * counters' names (pkg/dataplane counterSet). */
volatile const enum awfd_counter awfd_counter_names = AWFD_COUNTER_MAX;

INLINE void awfd_count(enum awfd_counter c)
{
	count_in(&awfd_counters, AWFD_COUNTER_MAX, c);
}

INLINE int decide_awfd(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	struct ct_key key;
	ct_key_of(f, &key);
	struct ct_bucket *b = ct_bucket(&key);
	int syn = flow_is_syn(f);
	int verdict = syn ? MUX_CT_SYN : MUX_CT_MISS;
	__u64 w;

	d->with_opt = 0;
	/* Unlike Maglev, a SYN looks too: a retransmitted SYN must reach the
	 * server its first SYN reached, though the record may have changed in
	 * between (Maglev's table does not change under it; AWFD's record
	 * changes four times a second). A new connection reusing a known
	 * 5-tuple stays with that server, which is as good a choice. */
	if (b) {
		struct ct_slot *s = NULL;
		__u16 known = ct_find(b, &key, &s);
		if (known && s) {
			w = server_word(servers, known);
			if (w && SERVER_STATE(w) != SERVER_DOWN) {
				ct_touch(s);
				decision_to(d, w);
				d->forward = 1;
				awfd_count(AWFD_CT_HIT);
				return MUX_CT_HIT;
			}
			awfd_count(AWFD_CT_STALE);
			verdict = MUX_CT_STALE;
		}
	}

	__u32 slot = vip->table;
	struct awfd_record *r = bpf_map_lookup_elem(&awfd_records, &slot);
	__u16 id = 0;
	int k = -1;
	w = 0;
	if (!r) {
		awfd_count(AWFD_NO_RECORD);
	} else {
		id = awfd_pick(r, flow_hash_of(f), &k);
		if (!id) {
			awfd_count(AWFD_NO_CLASS);
		} else {
			w = server_word(servers, id);
			if (!w || SERVER_STATE(w) != SERVER_ACTIVE) {
				awfd_count(AWFD_NOT_ACTIVE);
				id = 0;
			} else {
				awfd_count(AWFD_BY_CLASS);
			}
		}
	}
	if (!id) {
		int why;
		__u64 entry = bucket_word(vip, f, &why);
		id = BUCKET_CURRENT(entry);
		if (!id)
			return why;
		w = server_word(servers, id);
		if (!w)
			return MUX_DROP_UNKNOWN_SERVER;
	}
	if (b) {
		if (flood_allows_insert()) {
			ct_insert(b, &key, id);
		} else {
			awfd_count(AWFD_CT_FLOOD);
			mux_count(MUX_CT_FLOOD);
		}
	}
	decision_to(d, w);
	d->forward = 1;
	return verdict;
}

#endif
