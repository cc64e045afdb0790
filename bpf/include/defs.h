/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Kernel UAPI includes and the few definitions Debian's 6.1 headers lack. */
#ifndef BEAMER_DEFS_H
#define BEAMER_DEFS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7) /* Linux 6.3; missing from 6.1 UAPI */
#endif

#define IP_DF 0x4000
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

#define INLINE static __always_inline

/* The line of an address in a table of 2^bits lines: a multiplicative
 * (Fibonacci) hash of its host-order value (an IPv6 address's fold,
 * flow.h addr6_fold), which spreads the consecutive addresses of a prefix
 * over lines (pkg/dataplane addrLine is its twin). */
INLINE __u32 addr_line(__be32 addr, const __u32 bits)
{
	return (bpf_ntohl(addr) * 2654435761u) >> (32 - bits);
}

/* Compiler barrier: keeps the order of a load of the VIP record and of the
 * bucket it names (see mux.c on generations). */
#define barrier() asm volatile("" ::: "memory")

#define READ_ONCE_U64(p) (*(volatile __u64 *)(p))

#endif
