/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * IPv6 VIPs and servers in the mux, kept apart from the IPv4 ones so that
 * an IPv4 packet reads nothing more than before (vips.h, issue 18):
 *
 *   vip6_front     hash: the 16-byte VIP address -> index of its record in
 *                  vip_records (the same records as IPv4 VIPs, published
 *                  the same way: filled before the front names them, reused
 *                  after a grace period; pkg/dataplane vips.go). Allocated
 *                  without preallocation, so a replaced element is freed
 *                  after RCU and a lookup reads the old index or the new.
 *   server6_tables slot -> 65536 16-byte server addresses, by server id,
 *                  for an IPv6 instance. The server word (server_tables) is
 *                  as for IPv4 — bits 0-31 the address's last four bytes,
 *                  bits 32-39 the state — and is stored, atomically, after
 *                  the address it names; the mux takes the address only when
 *                  its last word matches the server word, so it never sends
 *                  to a half-written one.
 */
#ifndef BEAMER_VIPS6_H
#define BEAMER_VIPS6_H

#include "defs.h"
#include "mux_maps.h"
#include "vips.h"
#include "flow6.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_VIPS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct in6_addr);
	__type(value, __u32);
} vip6_front SEC(".maps");

struct server6_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SERVER_TABLE_SIZE);
	__uint(map_flags, BPF_F_INNER_MAP);
	__type(key, __u32);
	__type(value, struct in6_addr);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__array(values, struct server6_table);
} server6_tables SEC(".maps");

/* The record of the IPv6 VIP daddr, or NULL when it is no VIP. */
INLINE struct vip_info *vip_find6(const struct in6_addr *daddr)
{
	__u32 *rec = bpf_map_lookup_elem(&vip6_front, daddr);

	if (!rec)
		return NULL;
	__u32 key = *(volatile __u32 *)rec;
	union vip_record *r = bpf_map_lookup_elem(&vip_records, &key);
	return r ? &r->info : NULL;
}

/* Copies the IPv6 address of the server word w (server id id) into out;
 * 0 when the table lacks it or its last word does not match the word. */
INLINE int server6_addr(void *servers6, __u16 id, __u64 w, struct in6_addr *out)
{
	__u32 key = id;
	struct in6_addr *a = bpf_map_lookup_elem(servers6, &key);

	if (!w || !a)
		return 0;
	__builtin_memcpy(out, a, sizeof(*out));
	return out->in6_u.u6_addr32[3] == (__u32)w;
}

#endif
