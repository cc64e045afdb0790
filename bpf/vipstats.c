// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A server's traffic per VIP: packets and bytes of every packet to a VIP
 * the server receives, for the agent's metrics (per VIP and, summed by
 * scrape target, per server). It runs at tc ingress first in the tcx chain,
 * before the agent, only counts, and hands every packet on unchanged
 * (TCX_NEXT). A packet is counted by its inner destination and length:
 *
 *   IP-in-IP to this server   from a mux (no Beamer option or hop 0), or
 *                             daisy-chained by another server (hop > 0):
 *                             counted apart, as "chained"
 *   GUE over IPv4             the same, the private data's hop byte telling
 *                             the chained ones apart
 *   plain IPv4 to a VIP       already decapsulated (the agent's XDP program)
 *   GUE over IPv6 to an IPv6  as IP-in-IP (the private data's hop byte says
 *   VIP, or plain IPv6        chained); keyed by the 16-byte VIP
 *
 * Only VIPs whose keys the agent put in vip_stats are counted; other
 * packets cost one parse.
 */
#include "include/defs.h"
#include "include/limits.h"
#include <linux/ipv6.h>

#ifndef TCX_NEXT
#define TCX_NEXT -1 /* Linux 6.6 UAPI; missing from 6.1 */
#endif

#define BEAMER_OPT_TYPE 0x9e

struct vip_stats_key {
	__be32 vip;
	__u32 chained; /* 1: daisy-chained to this server by another */
};

struct vip_stats_val {
	__u64 packets;
	__u64 bytes; /* the client's packet: inner IPv4 total length */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 2 * AGENT_MAX_VIPS); /* two keys each */
	__type(key, struct vip_stats_key);
	__type(value, struct vip_stats_val);
} vip_stats SEC(".maps");

/* IPv6 VIPs (issue 16): the same counts, keyed by the 16-byte VIP. */
struct vip_stats6_key {
	struct in6_addr vip;
	__u32 chained;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 2 * AGENT_MAX_VIPS);
	__type(key, struct vip_stats6_key);
	__type(value, struct vip_stats_val);
} vip_stats6 SEC(".maps");

#define GUE_PROTO_IPV6 41

/* The inner packet after a GUE header at g (the UDP payload) naming the
 * inner protocol proto, or NULL when it is not GUE as Beamer sends it;
 * *chained is set when the private data's hop byte is not 0 (include/gue.h:
 * the private data is the option). The caller checks the inner header's
 * bounds. */
INLINE void *gue_inner(__u8 *g, void *end, __u8 proto, __u32 *chained)
{
	if ((void *)(g + 4) > end || (g[0] & 0xe0) || g[1] != proto)
		return NULL;
	__u32 priv = (g[0] & 0x1f) * 4;
	if (priv >= 3 && (void *)(g + 7) <= end && g[4] == BEAMER_OPT_TYPE && g[6] > 0)
		*chained = 1;
	return (void *)(g + 4) + priv;
}

/*
 * An IPv6 packet: GUE over IPv6 (UDP, then a GUE header naming an inner
 * IPv6 packet; private data whose hop byte is not 0: chained), or plain
 * IPv6 to a VIP. Any UDP port: only inner destinations that are this
 * server's VIPs are counted, and only GUE carries those to it.
 */
INLINE int count6(struct ipv6hdr *ip6, void *end)
{
	struct vip_stats6_key k = {};
	struct ipv6hdr *in = ip6;

	if ((void *)(ip6 + 1) > end)
		return TCX_NEXT;
	if (ip6->nexthdr == IPPROTO_UDP) {
		in = gue_inner((void *)(ip6 + 1) + sizeof(struct udphdr), end, GUE_PROTO_IPV6, &k.chained);
		if (!in || (void *)(in + 1) > end)
			return TCX_NEXT;
	}
	k.vip = in->daddr;
	struct vip_stats_val *v = bpf_map_lookup_elem(&vip_stats6, &k);
	if (v) {
		v->packets++;
		v->bytes += bpf_ntohs(in->payload_len) + sizeof(*in);
	}
	return TCX_NEXT;
}

SEC("tc")
int beamer_vipstats(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct vip_stats_key k = {};

	if ((void *)(eth + 1) > end)
		return TCX_NEXT;
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return count6((void *)(eth + 1), end);
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return TCX_NEXT;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TCX_NEXT;
	struct iphdr *in = ip;
	if (ip->protocol == IPPROTO_IPIP) {
		__u32 ihl = ip->ihl * 4;
		if (ihl < sizeof(*ip) || ihl > 60)
			return TCX_NEXT;
		__u8 *opt = (void *)(ip + 1);
		if (ihl >= sizeof(*ip) + 3 && (void *)(opt + 3) <= end && opt[0] == BEAMER_OPT_TYPE && opt[2] > 0)
			k.chained = 1;
		in = (void *)ip + ihl;
		if ((void *)(in + 1) > end)
			return TCX_NEXT;
	} else if (ip->protocol == IPPROTO_UDP && ip->ihl == 5) {
		/* GUE, any port: only inner destinations that are this
		 * server's VIPs are counted, and only GUE carries those to it. */
		in = gue_inner((void *)(ip + 1) + sizeof(struct udphdr), end, IPPROTO_IPIP, &k.chained);
		if (!in || (void *)(in + 1) > end)
			return TCX_NEXT;
	}
	k.vip = in->daddr;
	struct vip_stats_val *v = bpf_map_lookup_elem(&vip_stats, &k);
	if (v) {
		v->packets++;
		v->bytes += bpf_ntohs(in->tot_len);
	}
	return TCX_NEXT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
