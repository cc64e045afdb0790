/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * IP-in-IP encapsulation in XDP: grow the packet at its head by the outer
 * header (20 bytes, or 36-60 with the Beamer option), then write a fresh
 * Ethernet header (MACs are filled by the next-hop lookup) and the outer
 * IPv4 header in front of the untouched inner packet.
 */
#ifndef BEAMER_ENCAP_H
#define BEAMER_ENCAP_H

#include "defs.h"
#include "csum.h"
#include "wire.h"

/* What the outer header says; opt (its first opt.len bytes) is used only
 * when the outer header is longer than 20 bytes. */
struct encap_params {
	__be32 saddr;
	__be32 daddr;
	struct beamer_opt opt;
};

INLINE void write_outer_ipv4(struct iphdr *outer, __u16 inner_tot, __u8 tos, __be16 inner_frag,
			     const struct encap_params *p, const int outer_len)
{
	outer->version = 4;
	outer->ihl = (__u32)outer_len >> 2;
	outer->tos = tos;
	outer->tot_len = bpf_htons(inner_tot + outer_len);
	outer->id = 0;
	/* Keep the sender's don't-fragment choice; the id is 0 as RFC 6864
	 * allows for atomic datagrams. */
	outer->frag_off = inner_frag & bpf_htons(IP_DF);
	outer->ttl = BEAMER_OUTER_TTL;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = p->saddr;
	outer->daddr = p->daddr;
	/* The caller checked that OUTER_LEN_MAX bytes from outer are in the
	 * packet, so the conditional writes below stay in bounds whatever
	 * outer_len is. The checksum is summed from what was written: the IPv4
	 * header always, the option's fixed part when there is an option, and
	 * only then one compare per possible previous owner — a bucket that
	 * never moved (n = 0) pays 6 compares over the fixed 36-byte header. */
	const __u16 *w = (const __u16 *)outer;
	__u32 sum = 0;
#pragma unroll
	for (int i = 0; i < OUTER_LEN_PLAIN / 2; i++)
		sum += w[i];
	if (outer_len > OUTER_LEN_PLAIN) {
		struct beamer_opt *o = (void *)(outer + 1);
		__builtin_memcpy(o, &p->opt, BEAMER_OPT_FIXED);
		const __u16 *f = (const __u16 *)&p->opt;
#pragma unroll
		for (int i = 0; i < BEAMER_OPT_FIXED / 2; i++)
			sum += f[i];
#pragma unroll
		for (int i = 0; i < BEAMER_MAX_CHAIN; i++) {
			if (OUTER_LEN_WITH(i) < outer_len) {
				__be32 a = p->opt.prev[i];
				o->prev[i] = a;
				sum += (a & 0xffff) + (a >> 16);
			}
		}
	}
	outer->check = csum_fold32(sum);
}

/* What an outer IPv4 header takes from the inner one (IP-in-IP and GUE,
 * gue.h): read before the packet grows. */
struct inner_ipv4 {
	__u16 tot;  /* host order */
	__u8 tos;
	__be16 frag;
};

/* Reads the inner IPv4 header's fields and grows the packet at its head by
 * outer_len; 0 when the packet was not IPv4 enough or could not grow. */
INLINE int xdp_grow_for_ipv4(struct xdp_md *ctx, const int outer_len, struct inner_ipv4 *in)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *inner = data + sizeof(struct ethhdr);

	if ((void *)(inner + 1) > data_end)
		return 0;
	in->tot = bpf_ntohs(inner->tot_len);
	in->tos = inner->tos;
	in->frag = inner->frag_off;
	return bpf_xdp_adjust_head(ctx, -outer_len) == 0;
}

/*
 * Encapsulates the IPv4 packet that follows the Ethernet header. Returns the
 * new Ethernet header (MACs still to be set) or NULL if the packet could not
 * grow. outer_len is 20, or 36 + 4n with n <= BEAMER_MAX_CHAIN.
 */
INLINE struct ethhdr *xdp_encap_ipv4(struct xdp_md *ctx, const struct encap_params *p, const int outer_len)
{
	struct inner_ipv4 in;

	if (!xdp_grow_for_ipv4(ctx, outer_len, &in))
		return NULL;
	__u16 inner_tot = in.tot;
	__u8 tos = in.tos;
	__be16 frag = in.frag;

	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *outer = data + sizeof(struct ethhdr);

	/* Without the option only the 20-byte header is written (an inner UDP
	 * packet may be as short as 28 bytes). With it, the inner packet holds
	 * at least 28 bytes (IPv4 and UDP headers) and the outer header at
	 * least 36: the 60 bytes of the longest outer header are always in the
	 * packet, whatever outer_len is. */
	if (outer_len == OUTER_LEN_PLAIN) {
		if ((void *)outer + OUTER_LEN_PLAIN > data_end)
			return NULL;
		eth->h_proto = bpf_htons(ETH_P_IP);
		write_outer_ipv4(outer, inner_tot, tos, frag, p, OUTER_LEN_PLAIN);
		return eth;
	}
	if ((void *)outer + OUTER_LEN_MAX > data_end)
		return NULL;
	eth->h_proto = bpf_htons(ETH_P_IP);
	write_outer_ipv4(outer, inner_tot, tos, frag, p, outer_len);
	return eth;
}

#endif
