/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strategy cheetah (stateless Cheetah, docs/strategy-cheetah.md).
 *
 *   SYN with timestamps: a server picked by the instance's policy — round
 *     robin or weighted round robin over a pick list (a per-CPU position),
 *     power of two choices over the loads in cheetah_load, or the Beamer
 *     bucket's owner (hash) — sent without option.
 *   later segments with timestamps: the server the cookie in TSecr names
 *     (include/cheetah_cookie.h): any slot with a server word, active,
 *     retired or down, since only that server has the connection. A slot
 *     with no server is a bad cookie: dropped and counted.
 *   no timestamp option: the Beamer strategy — buckets and daisy chaining —
 *     for the whole connection (its server writes no cookie either).
 *   ports above 1024: MPTCP secondary subflows, by server id as under Beamer.
 *
 * The timestamp option is found by the NOP NOP TS fast path, else by a
 * general parse of the options copied with bpf_xdp_load_bytes.
 */
#ifndef BEAMER_STRATEGY_CHEETAH_H
#define BEAMER_STRATEGY_CHEETAH_H

#include "../include/decision.h"
#include "../include/limits.h"
#include "../include/tcp_ts.h"
#include "../include/cheetah_cookie.h"
#include "beamer.h"

enum cheetah_policy {
	CHEETAH_RR = 1,
	CHEETAH_WRR = 2,
	CHEETAH_P2C = 3,
	CHEETAH_HASH = 4,
};

/* An instance's keys, policy and pick list (server ids, each once for rr;
 * in proportion to their bucket shares, interleaved, for wrr). Replaced
 * whole (hash map without preallocation: RCU). */
struct cheetah_mux_inst {
	struct cheetah_key keys[2];
	__u8 policy;
	__u8 pad;
	__u16 n;
	__u16 picks[CHEETAH_MAX_PICKS];
};

enum cheetah_mux_counter {
	CHEETAH_MUX_SYN = 0,      /* SYN with timestamps: server picked by policy */
	CHEETAH_MUX_COOKIE_HIT,   /* cookie named a server: forwarded to it */
	CHEETAH_MUX_FAST_PARSE,   /* of the cookie hits: NOP NOP TS layout */
	CHEETAH_MUX_BAD_COOKIE,   /* cookie named no server (forged, stale, or no echo): dropped */
	CHEETAH_MUX_FALLBACK,     /* no timestamps: Beamer buckets and daisy chaining */
	CHEETAH_MUX_NO_PICK,      /* SYN but no server to pick (empty pick list) */
	CHEETAH_MUX_COOKIE_KEY1,  /* of the cookie hits: key id 1 (a rotation's progress) */
	CHEETAH_MUX_COUNTER_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TABLES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* table slot */
	__type(value, struct cheetah_mux_inst);
} cheetah_insts SEC(".maps");

/* Round-robin position per table slot and CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__type(value, __u32);
} cheetah_rr SEC(".maps");

/* Server loads for power of two choices: slot << 16 | id -> load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CHEETAH_LOAD_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} cheetah_load SEC(".maps");

DECLARE_COUNTERS(cheetah_mux_counters, CHEETAH_MUX_COUNTER_MAX);
volatile const enum cheetah_mux_counter cheetah_mux_counter_max = CHEETAH_MUX_COUNTER_MAX;

INLINE void cheetah_mux_count(enum cheetah_mux_counter c)
{
	count_in(&cheetah_mux_counters, CHEETAH_MUX_COUNTER_MAX, c);
}

INLINE __u32 cheetah_load_of(__u32 slot, __u16 id)
{
	__u32 key = slot << 16 | id;
	__u32 *l = bpf_map_lookup_elem(&cheetah_load, &key);

	return l ? *l : 0;
}

/* The server id a SYN goes to, or 0. */
INLINE __u16 cheetah_pick(const struct vip_info *vip, const struct cheetah_mux_inst *inst, const struct flow *f)
{
	__u32 n = inst->n;
	__u32 slot = vip->table;

	if (inst->policy == CHEETAH_HASH) {
		int why;
		return BUCKET_CURRENT(bucket_word(vip, f, &why));
	}
	if (!n || n > CHEETAH_MAX_PICKS)
		return 0;
	if (inst->policy == CHEETAH_P2C) {
		__u32 r = bpf_get_prandom_u32();
		/* a, b < n <= 1024: the masks change nothing but tell the verifier. */
		__u32 a = (r & 0xffff) % n, b = (r >> 16) % n;
		asm volatile("" : "+r"(a), "+r"(b)); /* keep the masks below */
		a &= CHEETAH_MAX_PICKS - 1;
		b &= CHEETAH_MAX_PICKS - 1;
		__u16 ia = inst->picks[a], ib = inst->picks[b];
		return cheetah_load_of(slot, ib) < cheetah_load_of(slot, ia) ? ib : ia;
	}
	__u32 *pos = bpf_map_lookup_elem(&cheetah_rr, &slot);
	if (!pos)
		return 0;
	__u32 i = *pos % n;
	*pos = i + 1;
	asm volatile("" : "+r"(i)); /* keep the mask below */
	return inst->picks[i & (CHEETAH_MAX_PICKS - 1)];
}

INLINE int decide_cheetah(struct xdp_md *ctx, const struct vip_info *vip, void *servers, const struct flow *f,
			  struct tcphdr *tcp, struct decision *d)
{
	__u32 slot = vip->table;
	const struct cheetah_mux_inst *inst = bpf_map_lookup_elem(&cheetah_insts, &slot);

	if (!inst)
		return MUX_DROP_NO_TABLE;
	/* UDP carries no timestamp to echo a cookie in: by bucket, as under
	 * Beamer. (MPTCP subflows never get here: mux.c sends the server-id
	 * range by id for every strategy.) */
	if (!tcp)
		return decide_beamer(vip, servers, f, d);

	void *data_end = (void *)(long)ctx->data_end;
	int ts = tcp_ts_fast(tcp, data_end);
	int fast = ts != 0;
	if (!ts) {
		struct ts_scan s = {};
		__u32 len = tcp_optlen(tcp);
		if (len > TCP_OPTROOM)
			len = 0;
		asm volatile("" : "+r"(len));
		if (len >= TCPOLEN_TS_ && len <= TCP_OPTROOM) {
			__u32 off = (void *)(tcp + 1) - (void *)(long)ctx->data;
			if (!bpf_xdp_load_bytes(ctx, off, s.b, len)) {
				s.len = len;
				ts = tcp_ts_general(&s);
			}
		}
	}
	__u8 *opt = (__u8 *)tcp + (ts & 0x3f);
	if (!ts || (void *)(opt + TCPOLEN_TS_) > data_end) {
		cheetah_mux_count(CHEETAH_MUX_FALLBACK);
		return decide_beamer(vip, servers, f, d);
	}

	__u16 id;
	__u8 kid = 0;
	if (flow_is_syn(f)) {
		id = cheetah_pick(vip, inst, f);
		if (!id) {
			cheetah_mux_count(CHEETAH_MUX_NO_PICK);
			return MUX_DROP_NO_OWNER;
		}
		cheetah_mux_count(CHEETAH_MUX_SYN);
	} else {
		__be32 raw;
		__builtin_memcpy(&raw, opt + 6, 4);
		__u16 cookie = ts_cookie(bpf_ntohl(raw));
		kid = cookie_kid(cookie);
		struct cheetah_key key = kid ? inst->keys[1] : inst->keys[0];
		id = cookie_id(cookie, cheetah_mask(&key, f->saddr, f->daddr, f->sport, f->dport));
	}
	__u64 w = id ? server_word(servers, id) : 0;
	if (!w) {
		cheetah_mux_count(CHEETAH_MUX_BAD_COOKIE);
		return MUX_DROP_UNKNOWN_SERVER;
	}
	if (!flow_is_syn(f)) {
		cheetah_mux_count(CHEETAH_MUX_COOKIE_HIT);
		if (fast)
			cheetah_mux_count(CHEETAH_MUX_FAST_PARSE);
		if (kid)
			cheetah_mux_count(CHEETAH_MUX_COOKIE_KEY1);
	}
	decision_to(d, w);
	d->with_opt = 0;
	d->forward = 1;
	return MUX_FWD_SERVER_ID;
}

#endif
