/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's maps: the layout the control plane drives (pkg/dataplane).
 *
 *   vip_front,     VIP address -> struct vip_info (which tables, B, ports,
 *   vip_records    generation): vips.h, never torn.
 *   bucket_tables  slot -> the bucket table: B 16-bit compact entries (four
 *                  to a 64-bit word), then B 64-bit side words read only for
 *                  buckets that moved (below; pkg/dataplane buckets.go)
 *   chain_tables   slot -> array of struct chain_entry: the bucket histories
 *                  (previous owners' ids) that bucket words refer to, each
 *                  distinct list once, interned by pkg/dataplane
 *   server_tables  slot -> array of 65536 64-bit server words (forwarding.Server.Pack,
 *                  with the server's traffic counter slot + 1 in bits 48-63)
 *   mux_counters   per-CPU decision counters.
 *   mux_vip_traffic     per-CPU traffic per VIP (slot named by vip_info.stats)
 *   mux_server_traffic  and per server (slot named by the server word's bits
 *                       48-63, SERVER_STAT): bpf/include/vip_traffic.h
 *
 * Bucket and server words are 64 bits and written by the daemon with single
 * aligned atomic stores through mmap, so a packet reads either the old or the
 * new word, never a mix. A chain entry is written before any bucket word
 * names it and never rewritten while one does (its slot is reused only after
 * no word names it, and as late as possible), so it needs no atomicity.
 */
#ifndef BEAMER_MUX_MAPS_H
#define BEAMER_MUX_MAPS_H

#include "defs.h"
#include "limits.h"
#include "counters.h"
#include "wire.h"

/* The strategy of a VIP: fixed values (forwarding.Strategy.Code), each
 * strategy's decision in bpf/strategy/NAME.h. */
enum strategy {
	STRATEGY_BEAMER = 1,
	STRATEGY_MAGLEV = 2,
	STRATEGY_PRISM = 3,   /* bpf/strategy/prism.h (issue 12) */
	STRATEGY_CHEETAH = 4, /* reserved: issue 13 */
	STRATEGY_AWFD = 5,    /* reserved: issue 14 */
};

/* A range of ports, host order, low <= high. */
struct port_range {
	__u16 low;
	__u16 high;
};

/* vip_info.flags */
#define VIP_F_QUIC 0x01        /* UDP: route QUIC packets by the server id in their CID */
#define VIP_F_ECHO_ANSWER 0x02 /* ICMP echo requests: answered by the mux */
#define VIP_F_ECHO_PASS 0x04   /* ICMP echo requests: to the mux host's stack (neither: dropped) */

/* The per-VIP record every strategy reads (at most 64 bytes: vips.h). */
struct vip_info {
	__u64 version;    /* generation of the tables' content (bits 0-31) and
			   * incarnation of the instance's ring (32-63): one
			   * word, stored atomically by the daemon */
	__u32 table;      /* slot in bucket_tables and server_tables */
	__u32 buckets;    /* B: size of the bucket table */
	__u16 id_low;     /* MPTCP server-id range (TCP ports naming a server); */
	__u16 id_high;    /*   id_low = 0: none */
	__u8 strategy;    /* enum strategy */
	__u8 flags;       /* VIP_F_* */
	__u8 n_ranges;    /* service port ranges; more than VIP_RECORD_RANGES: all */
	__u8 udp_mask;    /*   in port_sets[port_set]; bit i set: ranges[i] is UDP */
	struct port_range ranges[VIP_RECORD_RANGES];
	__u16 port_set;   /* index in port_sets, when n_ranges > VIP_RECORD_RANGES */
	__u8 quic_config; /* QUIC: config rotation id in the CID's first byte's top 3 bits */
	__u8 quic_cid_len;/* QUIC: length of server-issued CIDs (short headers do not say) */
	struct port_range quic_ports; /* QUIC: the UDP ports read as QUIC */
	__u8 encap;       /* ENCAP_IPIP (0) or ENCAP_GUE: bpf/include/gue.h */
	__u8 pad_encap;
	__u16 gue_port;   /* GUE: UDP destination port, host order */
	__u16 stats;      /* the VIP's traffic counters: slot + 1 in mux_vip_traffic (0: none) */
};

_Static_assert(sizeof(struct vip_info) <= 64, "the VIP record fits one cache line");

/* The ranges of a VIP with more than the record holds: one cache line. */
struct port_set {
	__u16 udp_mask; /* bit i set: r[i] is UDP */
	__u8 n;
	__u8 pad;
	struct port_range r[PORT_SET_RANGES];
};

_Static_assert(sizeof(struct port_set) == 64, "a port set is one cache line");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_VIPS);
	__type(key, __u32);
	__type(value, struct port_set);
} port_sets SEC(".maps");

/*
 * The bucket table of an instance, in two parts so that a bucket that never
 * moved costs one 16-bit read in a table of 2 bytes per bucket (2 MB at 1M
 * buckets, where 64-bit words made it 8 MB):
 *
 *   words [0, Q)      compact entries, Q = ceil(B / 4): entry i is bits
 *                     16*(i%4) of word i/4. An entry >= SERVER_ID_MIN is the
 *                     current server of a bucket without history;
 *                     BUCKET_NONE: no owner; BUCKET_MOVED: see the side word.
 *   words [Q, Q + B)  side word of bucket i: the whole bucket, read only when
 *                     its entry says BUCKET_MOVED.
 *   words [Q + B, ..) with B >= SUMMARY_MIN_BUCKETS only: block summaries
 *                     (below), ceil(B / 2^SUMMARY_SHIFT / 4) words.
 *
 * The whole bucket (what bucket_at returns, and every side word): bits 0-15
 * current server id, 16-31 chain reference (index in the instance's chain
 * table, 0 = no previous owner), 32-63 Unix seconds of the latest change.
 *
 * Never torn: the daemon stores a side word with one atomic 64-bit store
 * before the entry saying BUCKET_MOVED, and an entry with one atomic store
 * of its 64-bit word (the other three entries unchanged), so a packet reads
 * the old or the new entry, and after BUCKET_MOVED a whole side word of the
 * old or the new bucket.
 */
#define SERVER_ID_MIN 1025 /* forwarding.MinServerID: smaller entries name no server */

/*
 * Block summaries, in tables of SUMMARY_MIN_BUCKETS buckets or more (where
 * the compact entries outgrow the caches: 32 KB and up): after the side
 * words, one 16-bit summary per block of 2^SUMMARY_SHIFT buckets, four to a
 * word. A summary >= SERVER_ID_MIN says every bucket of its block is that
 * server's, without history; anything else (0) says "read the entry". The
 * controller keeps buckets in contiguous ranges (Beamer §4.5, appendix A1:
 * defragmentation), so most blocks are one owner's and most packets read a
 * table of B/128 bytes (8 KB at 1M buckets) instead of 2 MB.
 *
 * A summary is never newer than the entries it stands for: the daemon
 * clears it (one atomic store of its word) before it changes an entry of
 * the block, and sets it again only once all the block's entries name the
 * same owner. A packet that reads a set summary forwards as if it had read
 * that bucket's entry at that moment, old or new.
 */
#define SUMMARY_SHIFT 8 /* 256 buckets a block */
#define SUMMARY_MIN_BUCKETS (1 << 14)
#define BUCKET_NONE 0
#define BUCKET_MOVED 1
#define BUCKET_CURRENT(w) ((__u16)(w))
#define BUCKET_CHAIN(w) ((__u16)((w) >> 16))
#define BUCKET_CHANGED(w) ((__u32)((w) >> 32))
#define SERVER_ADDR(w) ((__be32)(w))
#define SERVER_STATE(w) ((__u8)((w) >> 32))
#define SERVER_STAT(w) ((__u16)((w) >> 48)) /* slot + 1 in mux_server_traffic (0: none) */

enum server_state {
	SERVER_ACTIVE = 1,
	SERVER_RETIRED = 2, /* no bucket, still serving its connections */
	SERVER_DOWN = 3,    /* failed health checks */
};

enum mux_counter {
	MUX_PASS_NOT_IPV4 = 0,   /* neither IPv4 nor IPv6 (or too short to tell): to the kernel */
	MUX_PASS_NOT_VIP,        /* IPv4 not addressed to a VIP: to the kernel */
	MUX_FWD_BUCKET,          /* service port: forwarded by bucket */
	MUX_FWD_SERVER_ID,       /* TCP to the server-id range: forwarded by server id (MPTCP) */
	MUX_FWD_WITH_PREVIOUS,   /* of MUX_FWD_BUCKET: option named previous servers */
	MUX_DROP_TRUNCATED,
	MUX_DROP_BAD_HEADER,
	MUX_DROP_IP_OPTIONS,
	MUX_DROP_FRAGMENT,
	MUX_DROP_NOT_TCP,        /* neither TCP, UDP nor ICMP (the name predates UDP) */
	MUX_DROP_CLOSED_PORT,    /* neither a service port of the VIP (per protocol) nor a server id */
	MUX_DROP_NO_TABLE,       /* VIP names a table slot that is not loaded */
	MUX_DROP_NO_OWNER,       /* bucket has no current server */
	MUX_DROP_UNKNOWN_SERVER, /* server id not in the server table */
	MUX_DROP_ENCAP,          /* could not grow the packet */
	MUX_DROP_NO_ROUTE,       /* no route to the server */
	MUX_DROP_NO_NEIGH,       /* next hop's MAC unknown */
	MUX_DROP_BAD_STRATEGY,   /* VIP record names a strategy this build lacks */
	MUX_CT_HIT,              /* maglev: connection entry found, its server active */
	MUX_CT_MISS,             /* maglev: no entry: server from the Maglev table */
	MUX_CT_SYN,              /* maglev: SYN: server from the table, entry replaced */
	MUX_CT_STALE,            /* maglev: entry's server gone or retired: chosen again */
	MUX_CT_FLOOD,            /* maglev: entry not inserted, new-connection cap reached */
	MUX_ICMP_TOO_BIG,        /* too big once encapsulated, DF set: ICMP frag needed sent back */
	MUX_DROP_TOO_BIG,        /* too big once encapsulated, DF clear: cannot fragment */
	MUX_CHAIN_MISSING,       /* bucket names a chain entry that is not loaded (sent without history) */
	MUX_PRISM_MCT_HIT,       /* prism: signature in the MCT: its server (keep-alive bit set) */
	MUX_PRISM_MCT_MISS,      /* prism: not in the MCT: the bin's owner */
	MUX_PRISM_LEARNED,       /* prism: SYN in a migrating bin, remembered by this mux (also counted as a miss) */
	MUX_PRISM_LEARNED_HIT,   /* prism: not in the MCT, remembered by this mux since its SYN */
	MUX_FWD_QUIC_CID,        /* QUIC: forwarded to the server its connection id names */
	MUX_QUIC_BY_BUCKET,      /* of the strategy's verdicts: a QUIC VIP's UDP packet without a usable id */
	MUX_FWD_ICMP_FRAG_NEEDED,/* of the verdicts: an ICMP frag needed, sent where the quoted connection's packets go */
	MUX_ICMP_ECHO_ANSWERED,  /* echo request to a VIP answered by the mux */
	MUX_PASS_ICMP_ECHO,      /* echo request to a VIP, to the mux host's stack */
	MUX_DROP_ICMP_ECHO,      /* echo request to a VIP, dropped by policy */
	MUX_DROP_ICMP,           /* other ICMP to a VIP, or a frag needed quoting no VIP TCP/UDP packet */
	MUX_PASS_NOT_VIP6,       /* IPv6 not addressed to a VIP: to the kernel */
	MUX_DROP_EXT_HEADERS,    /* IPv6 extension headers beyond the bound, or a routing header with segments left */
	MUX_DROP_NO_ADDR6,       /* IPv6 VIP, but the mux has no IPv6 address to send from */
	MUX_DROP_ENCAP6,         /* IPv6 VIP whose record names no GUE encapsulation (IPv6 outer is GUE only) */
	MUX_FWD_IPV6,            /* of the verdicts: an IPv6 packet, sent in GUE over IPv6 (bpf/include/mux6.h) */
	MUX_FWD_GUE,             /* of the verdicts: sent in GUE (the VIP's encap, bpf/include/gue.h) */
	MUX_DROP_ICMP_BAD_CHECKSUM, /* echo request to answer whose ICMP checksum is wrong: not answered */
	MUX_COUNTER_MAX,
};

struct bucket_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* each inner map is created with its own B */
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__type(key, __u32);
	__type(value, __u64);
};

/* A bucket history: n previous owners' server ids, most recent first. */
struct chain_entry {
	__u8 n;
	__u8 pad;
	__u16 ids[BEAMER_MAX_CHAIN];
	__u16 pad2;
};

_Static_assert(sizeof(struct chain_entry) == 16, "chain entry is 16 bytes");

/* BEAMER_MAX_CHAIN for Go (pkg/dataplane limits.go), which reads the other
 * limits from map sizes and value types: no map says this one (chain_table's
 * value is a plain array). Read-only data no program reads. */
volatile const __u32 limit_max_chain = BEAMER_MAX_CHAIN;

struct chain_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* each inner map is created with its own size */
	__uint(map_flags, BPF_F_INNER_MAP);
	__type(key, __u32);
	__type(value, __u64[2]); /* struct chain_entry: its BTF would be a bare forward here */
};

struct server_table {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SERVER_TABLE_SIZE);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__array(values, struct bucket_table);
} bucket_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__array(values, struct chain_table);
} chain_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_TABLES);
	__type(key, __u32);
	__array(values, struct server_table);
} server_tables SEC(".maps");

DECLARE_COUNTERS(mux_counters, MUX_COUNTER_MAX);

INLINE void mux_count(enum mux_counter c)
{
	count_in(&mux_counters, MUX_COUNTER_MAX, c);
}

/* A forwarded packet's decision counters in one lookup of the per-CPU
 * block (issue 27: one lookup each cost a few ns per packet): its verdict,
 * what also applies (0: nothing), and its encapsulation and family (gue,
 * is_ipv6: constants at each call). */
INLINE void mux_count_forward(__u32 verdict, __u32 also, const int gue, const int is_ipv6)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&mux_counters, &zero);

	if (!v)
		return;
	if (gue)
		v[MUX_FWD_GUE] += 1;
	if (is_ipv6)
		v[MUX_FWD_IPV6] += 1;
	if (verdict < MUX_COUNTER_MAX)
		v[verdict] += 1;
	if (also && also < MUX_COUNTER_MAX)
		v[also] += 1;
}

/* The whole bucket index of the table buckets (of B buckets), or 0 when
 * the table is shorter than B says: from its block's summary when the block
 * is one owner's, else its compact entry, and the side word only when the
 * entry says the bucket moved. */
INLINE __u64 bucket_at(void *buckets, __u32 b, __u32 index)
{
	__u32 key;

	if (b >= SUMMARY_MIN_BUCKETS) {
		__u32 block = index >> SUMMARY_SHIFT;
		key = ((b + 3) >> 2) + b + (block >> 2);
		__u64 *sw = bpf_map_lookup_elem(buckets, &key);
		if (sw) {
			__u16 s = *((volatile __u16 *)sw + (block & 3));
			if (s >= SERVER_ID_MIN)
				return s;
		}
	}
	key = index >> 2;
	__u64 *cw = bpf_map_lookup_elem(buckets, &key);

	if (!cw)
		return 0;
	__u16 c = *((volatile __u16 *)cw + (index & 3));
	if (c >= SERVER_ID_MIN)
		return c;
	if (c != BUCKET_MOVED)
		return 0; /* BUCKET_NONE */
	key = ((b + 3) >> 2) + index;
	__u64 *sw = bpf_map_lookup_elem(buckets, &key);
	return sw ? READ_ONCE_U64(sw) : 0;
}

/* The server word for id in table slot, or 0 when absent. */
INLINE __u64 server_word(void *servers, __u16 id)
{
	__u32 key = id;
	__u64 *w = bpf_map_lookup_elem(servers, &key);

	return w ? READ_ONCE_U64(w) : 0;
}

#endif
