/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Finding the TCP timestamp option (RFC 7323: kind 8, length 10, TSval,
 * TSecr). The Cheetah paper measured that 99.95% of non-SYN segments carry
 * NOP NOP TS first (Linux's layout), so that is tried first, inline; any
 * other layout gets a general parse bounded by the 40 bytes of option room,
 * run by bpf_loop so the verifier checks one step once instead of every path
 * through 40 unrolled steps.
 */
#ifndef BEAMER_TCP_TS_H
#define BEAMER_TCP_TS_H

#include "defs.h"

#define TCPOPT_EOL_ 0
#define TCPOPT_NOP_ 1
#define TCPOPT_TS_ 8
#define TCPOLEN_TS_ 10
#define TCP_OPTROOM 40

struct ts_scan {
	__u8 b[TCP_OPTROOM]; /* the options, copied */
	__u32 len;           /* how many of b are options */
	__u32 off;           /* next option to look at */
	int found;           /* offset of the TS option in b, or -1 */
};

static long ts_scan_step(__u32 i, void *ctx)
{
	struct ts_scan *s = ctx;
	__u32 off = s->off;

	if (off >= s->len || off >= TCP_OPTROOM - 1)
		return 1;
	__u8 kind = s->b[off];
	if (kind == TCPOPT_EOL_)
		return 1;
	if (kind == TCPOPT_NOP_) {
		s->off = off + 1;
		return 0;
	}
	__u8 len = s->b[off + 1];
	if (kind == TCPOPT_TS_) {
		if (len == TCPOLEN_TS_ && off + TCPOLEN_TS_ <= s->len)
			s->found = off;
		return 1;
	}
	if (len < 2)
		return 1;
	s->off = off + len;
	return 0;
}

/* Offset from the start of the TCP header of the TS option when the
 * segment starts its options with NOP NOP TS; 0 otherwise. */
INLINE int tcp_ts_fast(struct tcphdr *tcp, void *data_end)
{
	__u8 *opt = (__u8 *)(tcp + 1);

	if (tcp->doff < 8 || (void *)(opt + 12) > data_end)
		return 0;
	if (opt[0] == TCPOPT_NOP_ && opt[1] == TCPOPT_NOP_ && opt[2] == TCPOPT_TS_ && opt[3] == TCPOLEN_TS_)
		return sizeof(*tcp) + 2;
	return 0;
}

/* The general parse over options already copied into s->b (s->len bytes):
 * the TS option's offset from the start of the TCP header, or 0. */
INLINE int tcp_ts_general(struct ts_scan *s)
{
	s->off = 0;
	s->found = -1;
	bpf_loop(TCP_OPTROOM, ts_scan_step, s, 0);
	if (s->found < 0 || s->found > TCP_OPTROOM - TCPOLEN_TS_)
		return 0;
	return sizeof(struct tcphdr) + s->found;
}

/* Options length of a TCP header, 0..40. */
INLINE __u32 tcp_optlen(struct tcphdr *tcp)
{
	__u32 n = tcp->doff * 4;

	return n > sizeof(*tcp) ? (n - sizeof(*tcp)) & 0x3f : 0;
}

#endif
