/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's two time checks, shared by both families and both hooks
 * (agent.c agent_path), with the sanity bounds of agent.c's header comment
 * (agent_config.h), and the clock they read.
 */
#ifndef BEAMER_AGENT_EPOCH_H
#define BEAMER_AGENT_EPOCH_H

#include "defs.h"
#include "agent_maps.h"
#include "flow.h"
#include "agent_config.h"
#include "agent_words.h"
#include "wire.h"

/* The controller's clock as this server knows it: boot time plus the
 * offset the daemon keeps in agent_clock, in seconds. */
INLINE __u32 unix_seconds(void)
{
	__u32 key = 0;
	__u64 *offset = bpf_map_lookup_elem(&agent_clock, &key);
	__u64 now = bpf_ktime_get_boot_ns();

	if (offset)
		now += READ_ONCE_U64(offset);
	return (__u32)(now / 1000000000ULL);
}

/*
 * Is the packet's (incarnation, generation) exactly the newest remembered
 * for the VIP? The XDP fast path's question (agent.c, hook AGENT_XDP):
 * such a packet has nothing to remember and is not stale. 0 also when the
 * VIP's words are missing. opt: the option (both words read at once,
 * agent_words.h opt_epoch).
 */
_Static_assert(__builtin_offsetof(struct beamer_opt, incarnation) == __builtin_offsetof(struct beamer_opt, generation) + 4,
	       "opt_epoch reads generation and incarnation as one word");

INLINE int at_newest_epoch(const struct agent_vip *vip, const struct beamer_opt *opt)
{
	__u64 epoch = opt_epoch(&opt->generation);
	__u32 slot = vip->slot;
	struct generation_words *seen = bpf_map_lookup_elem(&generation_seen, &slot);

	if (!seen)
		return 0;
	__u64 a = READ_ONCE_U64(&seen->word[0]), b = READ_ONCE_U64(&seen->word[1]);
	return epoch == (a > b ? a : b);
}

/*
 * Remembers the packet's (incarnation, generation) as the VIP's newest
 * unless a bound refuses it, and tells whether the packet is from a mux at
 * the newest state remembered: 1 yes, 0 no (older, or refused), -1 the
 * VIP's words are missing. *now is the clock once read (0: not read).
 */
INLINE int remember_epoch(const struct agent_vip *vip, __be32 incarnation, __be32 generation, __u32 *now)
{
	__u64 epoch = (__u64)bpf_ntohl(incarnation) << 32 | bpf_ntohl(generation);
	__u32 slot = vip->slot;
	struct generation_words *seen = bpf_map_lookup_elem(&generation_seen, &slot);

	if (!seen)
		return -1;
	__u64 *wa = &seen->word[0], *wb = &seen->word[1];
	__u64 a = READ_ONCE_U64(wa), b = READ_ONCE_U64(wb);
	__u64 newest = a > b ? a : b;
	int accepted = 1;
	if (epoch > newest) {
		if (epoch >> 32 > newest >> 32) {
			*now = unix_seconds();
			if ((__u64)(epoch >> 32) > (__u64)*now + max_skew) {
				agent_count(AGENT_FUTURE_INCARNATION);
				accepted = 0;
			} else if (newest) {
				agent_count(AGENT_NEW_INCARNATION);
			}
		} else if (newest && (__u32)epoch - (__u32)newest > max_gen_jump) {
			agent_count(AGENT_SUSPICIOUS_GENERATION);
			accepted = 0;
		}
		if (accepted) {
			/* Raise the word of the current memory period. */
			__u32 key = 1;
			__u64 *cur = bpf_map_lookup_elem(&agent_clock, &key);
			newest = atomic_max_u64(cur && (READ_ONCE_U64(cur) & 1) ? wb : wa, epoch);
		}
	}
	return accepted && epoch == newest;
}

/*
 * Is the chaining window of f's bucket open? It runs from the latest
 * change time seen for the bucket (the packet's, clamped to the clock plus
 * the skew, raised into bucket_changed) for the VIP's window.
 */
INLINE int window_open(const struct agent_vip *vip, __be32 changed_be, const struct flow *f, __u32 *now)
{
	if (!*now)
		*now = unix_seconds();
	__u32 changed = bpf_ntohl(changed_be);
	if ((__u64)changed > (__u64)*now + max_skew) {
		agent_count(AGENT_CLAMPED_CHANGE);
		changed = *now + max_skew;
	}
	__u32 index = vip->bucket_base + bucket_of(flow_hash_of(f), vip->buckets);
	__u32 *seen = bpf_map_lookup_elem(&bucket_changed, &index);
	if (seen)
		changed = atomic_max_u32(seen, changed);
	return (__u64)*now < (__u64)changed + vip->window;
}

#endif
