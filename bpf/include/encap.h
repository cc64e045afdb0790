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

/* Writes the 20 bytes of an outer IPv4 header but its checksum (id 0, TTL
 * BEAMER_OUTER_TTL; tot and frag in network order) and returns the sum of
 * its 16-bit words. The sum is taken from the values in registers, not read
 * back from the packet (issue 18: the read-back cost 3-8 ns): each word is
 * stored as the value summed, so the sum is the one of the header's bytes
 * on either byte order. */
INLINE __u32 put_outer_ipv4(struct iphdr *outer, const int ihl, __u8 tos, __be16 tot, __be16 frag, const __u8 proto,
			    __be32 saddr, __be32 daddr)
{
	__u16 *w = (__u16 *)outer;
	__u16 vihl_tos = bpf_htons(((0x40 | ihl) << 8) | tos);
	__u16 ttl_proto = bpf_htons((BEAMER_OUTER_TTL << 8) | proto);

	w[0] = vihl_tos; /* version, ihl, tos: one store, no bitfield merge */
	outer->tot_len = tot;
	outer->id = 0; /* RFC 6864: 0 for atomic datagrams */
	outer->frag_off = frag;
	w[4] = ttl_proto;
	outer->check = 0;
	outer->saddr = saddr;
	outer->daddr = daddr;
	return (__u32)vihl_tos + tot + frag + ttl_proto + (saddr & 0xffff) + (saddr >> 16) + (daddr & 0xffff) +
	       (daddr >> 16);
}

INLINE void write_outer_ipv4(struct iphdr *outer, __u16 inner_tot, __u8 tos, __be16 inner_frag,
			     const struct encap_params *p, const int outer_len)
{
	/* Keep the sender's don't-fragment choice. */
	__u32 sum = put_outer_ipv4(outer, (__u32)outer_len >> 2, tos, bpf_htons(inner_tot + outer_len),
				   inner_frag & bpf_htons(IP_DF), IPPROTO_IPIP, p->saddr, p->daddr);
	/* The caller checked that OUTER_LEN_MAX bytes from outer are in the
	 * packet, so the conditional writes below stay in bounds whatever
	 * outer_len is. The option's fixed part is summed when there is an
	 * option, and only then one compare per possible previous owner — a
	 * bucket that never moved (n = 0) pays 6 compares over the fixed
	 * 36-byte header. */
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
