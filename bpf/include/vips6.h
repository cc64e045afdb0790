/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * IPv6 VIPs and servers in the mux, kept apart from the IPv4 ones so that
 * an IPv4 packet reads nothing more than before (vips.h, issue 18):
 *
 *   vip6_front     the IPv4 front's twin: VIP_FRONT_LINES lines of
 *                  8 words, a VIP in one word of line hash(fold), the word
 *                  holding the fold of its address (flow.h, bits 0-31)
 *                  and its record + 1 (bits 32-47). The records are the
 *                  IPv4 VIPs' array, published under the same rules.
 *   vip6_addrs     by record: the VIP's 16-byte address, written before a
 *                  front word names the record, which the lookup compares
 *                  (two VIPs' folds may be equal). Both maps are declared
 *                  in vips.h, whose vip_find reads them for IPv6.
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
#include "flow.h"

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
