/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy maglev (Maglev §3.3–3.4): the Maglev lookup table (the bucket
 * array, B = M prime) and a per-CPU connection table (conntrack.h).
 */
#ifndef BEAMER_STRATEGY_MAGLEV_H
#define BEAMER_STRATEGY_MAGLEV_H

#include "../include/decision.h"
#include "../include/conntrack.h"

/*
 * Maglev with connection tracking: a known connection goes to the server
 * remembered for it while that server is healthy — active, or retired and
 * draining its connections; a new one (a miss, or any SYN) goes to the
 * Maglev table's entry for its hash and is remembered,
 * unless the flood guard says this CPU has inserted enough this second.
 * No option: servers of a Maglev VIP do not daisy-chain.
 */
INLINE int decide_maglev(const struct vip_info *vip, void *servers, const struct flow *f, struct decision *d)
{
	struct flow_key key = {
		.saddr = f->saddr, .daddr = f->daddr, .sport = f->sport, .dport = f->dport, .proto = f->proto,
	};
	void *ct = conntrack_table();
	int syn = flow_is_syn(f);
	int verdict = syn ? MUX_CT_SYN : MUX_CT_MISS;

	d->with_opt = 0;
	if (ct && !syn) {
		struct flow_entry *e = bpf_map_lookup_elem(ct, &key);
		if (e) {
			__u64 w = server_word(servers, e->server);
			if (w && SERVER_STATE(w) != SERVER_DOWN) {
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
	if (ct) {
		if (flood_allows_insert()) {
			struct flow_entry fresh = {.server = current};
			bpf_map_update_elem(ct, &key, &fresh, BPF_ANY);
		} else {
			mux_count(MUX_CT_FLOOD);
		}
	}
	decision_to(d, w);
	d->forward = 1;
	return verdict;
}

#endif
