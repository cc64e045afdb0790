/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Beamer encapsulation in GUE (draft-ietf-intarea-gue, version 0), the
 * per-instance alternative to IP-in-IP + option (docs/wire-format.md,
 * "GUE"). Routers and NICs treat it as ordinary UDP: no IP option for a
 * router to punt to its slow path, and the UDP source port — taken from
 * the inner flow hash — gives ECMP and RSS the entropy the inner 5-tuple
 * would have given.
 *
 *   outer IPv4 (20) or IPv6 (40), protocol/next header UDP
 *   UDP (8): source port GUE_SPORT(flow hash), destination the instance's
 *            GUE port, checksum 0 (RFC 768 for IPv4; RFC 6935/6936 for
 *            IPv6 tunnels: the receiver is our agent, which checks every
 *            header it reads)
 *   GUE (4): version 0, C 0, Hlen = private data length / 4, Proto = the
 *            inner packet's protocol (4 IPv4, 41 IPv6), flags 0
 *   private data (Hlen * 4 bytes): exactly the Beamer option's bytes
 *            (wire.h struct beamer_opt; same type byte 0x9e, length, hop,
 *            flags, generation, incarnation, changed, prev[]) for IPv4
 *            outer; struct beamer_opt6 (16-byte prev[]) for IPv6 outer.
 *            Absent (Hlen 0) where IP-in-IP would carry no option.
 *   the client's packet, unchanged.
 *
 * Because the private data is byte for byte the option, the agent runs the
 * same checks and the same chaining decision on either encapsulation; it
 * chains in the encapsulation it received (rewriting the outer addresses,
 * TTL and checksums and the hop byte, nothing else).
 */
#ifndef BEAMER_GUE_H
#define BEAMER_GUE_H

#include "defs.h"
#include "csum.h"
#include "wire.h"
#include "encap.h"

/* vip_info.encap: how the mux encapsulates the VIP's packets. 0 is what
 * every record written before GUE existed holds. */
#define ENCAP_IPIP 0
#define ENCAP_GUE 1

/* Default destination port (forwarding.DefaultGUEPort): GUE has no IANA
 * port; 6080 is outside Linux's ephemeral range and beside Geneve's 6081. */
#define GUE_DEFAULT_PORT 6080

struct guehdr {
	__u8 hlen;     /* version (2 bits) 0, C (1 bit) 0, Hlen (5 bits): private data / 4 */
	__u8 proto;    /* inner protocol: IPPROTO_IPIP (4) or IPPROTO_IPV6 (41) */
	__be16 flags;  /* 0: no optional fields, only private data */
} __attribute__((packed));

#define GUE_HLEN_MASK 0x1f
#define GUE_PROTO_IPV4 4
#define GUE_PROTO_IPV6 41

/* The UDP source port from the inner flow hash: 49152 + 14 bits of it
 * (the dynamic range, as RFC 7510 and RFC 8086 ask of tunnel entropy). The
 * low bits, because the bucket is taken from the high ones (multiply-shift),
 * so flows of one bucket still spread over NIC queues and ECMP paths. */
#define GUE_SPORT(hash) ((__u16)(0xc000 | ((hash) & 0x3fff)))

/* IPv4 outer: IPv4 + UDP + GUE, then the option bytes as private data. */
#define GUE4_LEN_PLAIN ((int)(sizeof(struct iphdr) + sizeof(struct udphdr) + sizeof(struct guehdr))) /* 32 */
#define GUE4_LEN_OPT (GUE4_LEN_PLAIN + BEAMER_OPT_FIXED)   /* 48 */
#define GUE4_LEN_MAX (GUE4_LEN_PLAIN + BEAMER_OPT_MAX)     /* 72 */
#define GUE4_LEN_WITH(n) (GUE4_LEN_OPT + 4 * (n))
/* What GUE adds to IP-in-IP's outer length, option or not. */
#define GUE4_EXTRA (GUE4_LEN_PLAIN - OUTER_LEN_PLAIN)      /* 12 */

/* IPv6 outer: the same fixed 16 bytes, previous owners as 16-byte IPv6
 * addresses. 16 + 16 * 6 = 112 bytes = Hlen 28, within GUE's 5-bit Hlen. */
struct beamer_opt6 {
	__u8 type;          /* BEAMER_OPT_TYPE */
	__u8 len;           /* 16 + 16n */
	__u8 hop;
	__u8 flags;         /* BEAMER_OPT_F_* */
	__be32 generation;
	__be32 incarnation;
	__be32 changed;
	__be32 prev[BEAMER_MAX_CHAIN][4]; /* IPv6 addresses, network order */
} __attribute__((packed));

#define BEAMER_OPT6_MAX (BEAMER_OPT_FIXED + 16 * BEAMER_MAX_CHAIN) /* 112 */
_Static_assert(sizeof(struct beamer_opt6) == BEAMER_OPT6_MAX, "IPv6 private data is 112 bytes at most");

#define IPV6_HDR_LEN 40
#define GUE6_LEN_PLAIN (IPV6_HDR_LEN + (int)sizeof(struct udphdr) + (int)sizeof(struct guehdr)) /* 52 */
#define GUE6_LEN_OPT (GUE6_LEN_PLAIN + BEAMER_OPT_FIXED)   /* 68 */
#define GUE6_LEN_MAX (GUE6_LEN_PLAIN + BEAMER_OPT6_MAX)    /* 164 */
#define GUE6_LEN_WITH(n) (GUE6_LEN_OPT + 16 * (n))

/* What the IPv6 outer header says (xdp_encap_gue6). */
struct encap6_params {
	__be32 saddr[4];
	__be32 daddr[4];
	struct beamer_opt6 opt;
};

/* Writes the UDP and GUE headers and, when outer_len says so, the private
 * data (the option's first priv bytes) after the outer IP header. udp_len
 * is the UDP length (UDP header to the end of the inner packet). */
INLINE void write_gue(struct udphdr *udp, __be16 sport, __be16 dport, __u16 udp_len, __u8 inner_proto, int priv)
{
	struct guehdr *g = (void *)(udp + 1);

	udp->source = sport;
	udp->dest = dport;
	udp->len = bpf_htons(udp_len);
	udp->check = 0;
	g->hlen = (__u8)((__u32)priv >> 2) & GUE_HLEN_MASK;
	g->proto = inner_proto;
	g->flags = 0;
}

/*
 * Encapsulates the IPv4 packet that follows the Ethernet header in IPv4 +
 * UDP + GUE, with p->opt as private data when outer_len > GUE4_LEN_PLAIN.
 * Returns the new Ethernet header (MACs still to be set) or NULL if the
 * packet could not grow. outer_len is GUE4_LEN_PLAIN or GUE4_LEN_WITH(n),
 * n <= BEAMER_MAX_CHAIN; sport, dport in network order.
 */
INLINE struct ethhdr *xdp_encap_gue4(struct xdp_md *ctx, const struct encap_params *p, const int outer_len,
				     __be16 sport, __be16 dport)
{
	struct inner_ipv4 in;

	if (!xdp_grow_for_ipv4(ctx, outer_len, &in)) /* encap.h */
		return NULL;
	__u16 inner_tot = in.tot;
	__u8 tos = in.tos;
	__be16 frag = in.frag;

	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *outer = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(outer + 1);

	/* As in xdp_encap_ipv4: without private data only the 32 bytes of
	 * headers are written; with it, the inner IPv4 and UDP headers (28)
	 * follow at least 48 bytes of outer headers, so the 72 bytes of the
	 * longest are in the packet whatever outer_len is. */
	if (outer_len == GUE4_LEN_PLAIN) {
		if ((void *)outer + GUE4_LEN_PLAIN > data_end)
			return NULL;
	} else if ((void *)outer + GUE4_LEN_MAX > data_end) {
		return NULL;
	}
	eth->h_proto = bpf_htons(ETH_P_IP);
	outer->check = csum_fold32(put_outer_ipv4(outer, 5, tos, bpf_htons(inner_tot + outer_len), frag & bpf_htons(IP_DF),
						  IPPROTO_UDP, p->saddr, p->daddr)); /* encap.h */
	int priv = outer_len - GUE4_LEN_PLAIN;
	write_gue(udp, sport, dport, inner_tot + outer_len - OUTER_LEN_PLAIN, GUE_PROTO_IPV4, priv);
	if (outer_len > GUE4_LEN_PLAIN) {
		struct beamer_opt *o = (void *)udp + sizeof(struct udphdr) + sizeof(struct guehdr);
		__builtin_memcpy(o, &p->opt, BEAMER_OPT_FIXED);
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++)
			if (GUE4_LEN_WITH(i) < outer_len)
				o->prev[i] = p->opt.prev[i];
	}
	return eth;
}

/*
 * The same for an IPv6 packet after the Ethernet header, in IPv6 + UDP +
 * GUE with p->opt as private data when outer_len > GUE6_LEN_PLAIN.
 * outer_len is GUE6_LEN_PLAIN or GUE6_LEN_WITH(n). Hop limit 64, traffic
 * class copied from the inner header, flow label 0 (the UDP source port
 * carries the entropy).
 */
INLINE struct ethhdr *xdp_encap_gue6(struct xdp_md *ctx, const struct encap6_params *p, const int outer_len,
				     __be16 sport, __be16 dport)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *inner = data + sizeof(struct ethhdr);

	if ((void *)inner + IPV6_HDR_LEN > data_end)
		return NULL;
	/* Inner payload length + its 40-byte header: the inner packet. */
	__u16 inner_tot = ((__u16)inner[4] << 8 | inner[5]) + IPV6_HDR_LEN;
	__u8 tc = (__u8)((inner[0] << 4) | (inner[1] >> 4));

	if (bpf_xdp_adjust_head(ctx, -outer_len))
		return NULL;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 *outer = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(outer + IPV6_HDR_LEN);

	/* Unlike IPv4's, the longest outer headers (164 bytes) may be longer
	 * than a short packet with them: each previous owner is checked
	 * against the end as it is written (never failing for an outer_len
	 * the packet was grown by). */
	if ((void *)outer + GUE6_LEN_PLAIN > data_end)
		return NULL;
	eth->h_proto = bpf_htons(ETH_P_IPV6);
	__u16 payload = inner_tot + outer_len - IPV6_HDR_LEN;
	outer[0] = 0x60 | (tc >> 4);
	outer[1] = (__u8)(tc << 4);
	outer[2] = 0;
	outer[3] = 0;
	outer[4] = payload >> 8;
	outer[5] = payload & 0xff;
	outer[6] = IPPROTO_UDP;
	outer[7] = BEAMER_OUTER_TTL;
	__builtin_memcpy(outer + 8, p->saddr, 16);
	__builtin_memcpy(outer + 24, p->daddr, 16);
	int priv = outer_len - GUE6_LEN_PLAIN;
	write_gue(udp, sport, dport, payload, GUE_PROTO_IPV6, priv);
	if (outer_len > GUE6_LEN_PLAIN) {
		struct beamer_opt6 *o = (void *)udp + sizeof(struct udphdr) + sizeof(struct guehdr);
		if ((void *)o + BEAMER_OPT_FIXED > data_end)
			return NULL;
		__builtin_memcpy(o, &p->opt, BEAMER_OPT_FIXED);
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
			if (GUE6_LEN_WITH(i) < outer_len) {
				if ((void *)o->prev[i] + 16 > data_end)
					return NULL;
				__builtin_memcpy(o->prev[i], p->opt.prev[i], 16);
			}
		}
	}
	return eth;
}

/*
 * Decoding, for the agent: the GUE header at g (4 bytes known present),
 * received in an outer packet of udp_len UDP bytes. Returns the length of
 * its private data (0 or a Beamer option's 16 + 4n, IPv4 outer; 16 + 16n,
 * IPv6 outer: addr_size 4 or 16), or -1 when it is not GUE as Beamer sends
 * it: version 0, data message, no flags, the expected inner protocol,
 * private data that is exactly one option, hop within the list. *n is set
 * to the number of previous owners. The option's bytes must be readable up
 * to the longest private data (the caller's bound check).
 */
INLINE int gue_check(const struct guehdr *g, __u8 inner_proto, const int addr_size, int *n)
{
	const struct beamer_opt *o = (const void *)(g + 1);

	if ((g->hlen & ~GUE_HLEN_MASK) || g->proto != inner_proto || g->flags)
		return -1;
	int priv = (g->hlen & GUE_HLEN_MASK) << 2;
	*n = 0;
	if (!priv)
		return 0;
	if (priv < BEAMER_OPT_FIXED || o->type != BEAMER_OPT_TYPE || o->len != priv)
		return -1;
	if ((priv - BEAMER_OPT_FIXED) % addr_size)
		return -1;
	int cnt = (priv - BEAMER_OPT_FIXED) / addr_size;
	if (cnt > BEAMER_MAX_CHAIN || o->hop > cnt)
		return -1;
	*n = cnt;
	return priv;
}

#endif
