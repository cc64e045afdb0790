/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Finding a packet's VIP record in two cache lines, without a helper call:
 *
 *   vip_front    a tiny exact-match table: VIP_FRONT_LINES lines of 8
 *                64-bit words; a VIP lives in one word of line
 *                hash(address), the word holding its address (bits 0-31,
 *                as in the packet) and the index + 1 of its record (bits
 *                32-47); 0 is an empty word.
 *   vip_records  the records, one cache line each (union vip_record).
 *
 * Both are global arrays, whose lookups the verifier turns into address
 * arithmetic (no helper call, no hashing of a key, no bucket walk), unlike
 * the hash map this replaces (16-28 ns per packet, issue 18).
 *
 * Never torn, never half published (pkg/dataplane vips.go): a front word is
 * written with one aligned atomic store and a VIP never changes word while
 * it exists, so a packet finds the old record or the new one. A record
 * named by no word is filled whole before a word names it, and a record a
 * word stopped naming is reused only after an RCU grace period, when no
 * packet that read the old word can still be reading it. The one field that
 * changes while a word names the record — the version, generation and
 * incarnation — is one aligned 64-bit word, stored atomically.
 */
#ifndef BEAMER_VIPS_H
#define BEAMER_VIPS_H

#include "defs.h"
#include "limits.h"
#include "mux_maps.h"
#include "flow.h"

#define VIP_FRONT_WAYS 8                      /* words per line: one cache line */

struct vip_front_line {
	__u64 w[VIP_FRONT_WAYS];
};

_Static_assert(sizeof(struct vip_front_line) == 64, "a front line is one cache line");

/* A record padded to a cache line: array values are laid out from a page
 * boundary, so each record is one line. */
union vip_record {
	struct vip_info info;
	__u8 line[64];
};

_Static_assert(sizeof(union vip_record) == 64, "a VIP record is one cache line");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIP_FRONT_LINES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vip_front_line);
} vip_front SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIP_RECORDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, union vip_record);
} vip_records SEC(".maps");

/* The IPv6 VIPs: their own front, keyed by the address's fold, and each
 * record's full address (vips6.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIP_FRONT_LINES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vip_front_line);
} vip6_front SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIP_RECORDS);
	__type(key, __u32);
	__type(value, struct in6_addr);
} vip6_addrs SEC(".maps");

/* The line of a VIP in the front (pkg/dataplane vipLine is its twin). */
INLINE __u32 vip_line(__be32 addr)
{
	return addr_line(addr, VIP_FRONT_BITS);
}

/* The record of the VIP daddr, or NULL when daddr is no VIP; one path for
 * both families (is_ipv6 a constant at each call): an IPv4 address is word
 * 0 of daddr, an IPv6 one all four. A VIP is usually in the first word of
 * its line: the scan stops at its word. IPv6 lines are keyed by the
 * address's fold (flow.h), and folds of distinct VIPs may collide: a
 * matching word names a candidate record, the one whose address
 * (vip6_addrs) is daddr is the VIP's. */
INLINE struct vip_info *vip_find(const __be32 *daddr, const int is_ipv6)
{
	const struct in6_addr *daddr6 = (const struct in6_addr *)daddr;
	__be32 key = is_ipv6 ? addr6_fold(daddr6) : daddr[0];
	__u32 line = vip_line(key);
	struct vip_front_line *l = bpf_map_lookup_elem(is_ipv6 ? (void *)&vip6_front : (void *)&vip_front, &line);
	__u32 rec = 0;

	if (!l)
		return NULL;
#pragma unroll
	for (int i = 0; i < VIP_FRONT_WAYS; i++) {
		__u64 w = READ_ONCE_U64(&l->w[i]);
		if ((__u32)w == (__u32)key && (w >> 32)) {
			rec = ((__u32)(w >> 32) & 0xffff) - 1;
			if (!is_ipv6)
				break;
			struct in6_addr *a = bpf_map_lookup_elem(&vip6_addrs, &rec);
			if (a && addr6_eq(a, daddr6))
				break;
		}
		if (i == VIP_FRONT_WAYS - 1)
			return NULL;
	}
	union vip_record *r = bpf_map_lookup_elem(&vip_records, &rec);
	return r ? &r->info : NULL;
}

#endif
