/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet capture in the data path (`beamer mux capture`, `beamer agent
 * capture`; docs/operations.md, "Capturing packets"). Each program calls
 * capture_xdp / capture_skb at its capture points with the point's number;
 * the packet as it is there (received, encapsulated, decapsulated, chained)
 * goes to the ring buffer capture_ring when the command's filter in
 * capture_cfg takes it.
 *
 * Capture off (the daemon's state: capture_on and capture_cfg zero) costs
 * each point one load and a branch that is never taken: capture_on is a
 * word in a data section of its own (a one-element array map whose value's
 * address the program holds as a constant, so no lookup at all; the
 * command writes it through the daemon's pin of that map). The work is in a
 * global function, verified once on its own and called only when capture
 * is on: the programs gain the call and little else.
 *
 * Capture on: the packet's first bytes are copied into a per-CPU scratch
 * record (bpf_xdp_load_bytes / bpf_skb_load_bytes read past XDP fragments
 * and non-linear socket buffers alike), the innermost packet's 5-tuple is
 * read from the copy (through IP-in-IP, and GUE to cfg->gue_port), and a
 * matching packet is output to the ring with only the bytes asked for
 * (snaplen). A BPF ring buffer rather than a perf buffer (bpf_xdp_output /
 * bpf_skb_output, which copy the packet themselves): one buffer for every
 * CPU, so records arrive in the order they were written, to one reader,
 * where perf buffers are per CPU and would need merging by time; and the
 * filter has to read the headers first anyway, which perf output would
 * have us do into the stack. The per-CPU scratch lets the record be sized
 * by the packet (bpf_ringbuf_output) rather than reserved at the maximum,
 * and keeps the parse off the stack: the global function's frame is added
 * to the calling program's, and the verifier allows 512 bytes for all the
 * frames of a call chain (the mux's IPv6 program uses 464 of them: it has
 * no mux-tx point, see capture_xdp6 below).
 *
 * The bound is the kernel's too: cfg->remaining is taken by an atomic
 * decrement per record and nothing is written once it reaches 0, nor after
 * cfg->deadline_ns, whatever becomes of the command that set them.
 */
#ifndef BEAMER_CAPTURE_H
#define BEAMER_CAPTURE_H

#include "defs.h"
#include "limits.h"

/* Capture points; pkg/dataplane capture.go names them. */
enum capture_point {
	CAPTURE_MUX_RX = 1,       /* the mux received it (XDP entry) */
	CAPTURE_MUX_TX = 2,       /* the mux sends it, encapsulated */
	CAPTURE_AGENT_RX = 3,     /* tc: an encapsulated packet for this server */
	CAPTURE_AGENT_UP = 4,     /* tc: decapsulated, to the local stack */
	CAPTURE_AGENT_CHAIN = 5,  /* tc: re-encapsulated to a previous owner */
	CAPTURE_AGENT_XDP_RX = 6, /* XDP fast path: before decapsulation */
	CAPTURE_AGENT_XDP_UP = 7, /* XDP fast path: decapsulated, to the stack */
};

/* Bytes read to find the innermost 5-tuple, whatever the snaplen:
 * Ethernet, IPv6 + UDP + GUE with the longest private data, inner IPv6,
 * ports. */
#define CAPTURE_PARSE_LEN 256

/* capture_cfg.match: which fields the filter compares. */
#define CAPTURE_M_SRC 0x1
#define CAPTURE_M_DST 0x2
#define CAPTURE_M_SPORT 0x4
#define CAPTURE_M_DPORT 0x8
#define CAPTURE_M_PROTO 0x10

/* The filter the command writes (pkg/dataplane capture.go encodes it byte
 * for byte: keep the two in step). Zero: capture off. */
struct capture_cfg {
	__u32 enabled;
	__u32 snaplen;     /* bytes kept per packet, 1..CAPTURE_SNAP_MAX */
	__s64 remaining;   /* records still to write; taken atomically */
	__u64 deadline_ns; /* bpf_ktime_get_ns after which nothing is written; 0: none */
	__u64 lost;        /* matching packets the ring had no room for */
	__u32 points;      /* bit 1 << point for each point wanted; 0: all */
	__u32 match;       /* CAPTURE_M_* */
	__u8 family;       /* of src and dst: 4 or 6 (0 when neither is set) */
	__u8 proto;        /* IPPROTO_TCP, _UDP, _ICMP... with CAPTURE_M_PROTO */
	__be16 gue_port;   /* UDP destination port read as GUE */
	__be16 sport, dport;
	__u8 src[16], dst[16]; /* IPv4: the first 4 bytes */
};

/* Each record: this header, then caplen bytes of the packet. */
struct capture_rec {
	__u64 ts_ns;   /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u32 len;     /* the packet's length */
	__u32 caplen;  /* bytes that follow */
	__u32 point;   /* enum capture_point */
	__u32 ifindex; /* the device it was seen on */
	__u8 data[CAPTURE_SNAP_MAX];
};

#define CAPTURE_REC_HDR 24

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_cfg);
} capture_cfg SEC(".maps");

/* Nonzero while a capture runs (set after capture_cfg, cleared before it):
 * the one word the hooks read. */
volatile __u32 capture_on SEC(".data.capture");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CAPTURE_RING_BYTES);
} capture_ring SEC(".maps");

/* The innermost packet's addresses, protocol and ports. */
struct capture_tuple {
	__u8 src[16], dst[16]; /* first: compared as aligned words */
	__be16 sport, dport;
	__u8 family, proto;
};

/* Per CPU: the record being made and the tuple read from it (in the map,
 * not on the stack: the hooks sit in programs whose stack is nearly full). */
struct capture_scratch {
	struct capture_rec rec;
	struct capture_tuple t;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct capture_scratch);
} capture_scratch SEC(".maps");

/* capture_ip's answer for a header whose ports are not to be read. */
#define CAPTURE_NO_PORTS (CAPTURE_PARSE_LEN + 1)

/* Reads the IP header at off of the copy (n bytes of it valid) as family
 * fam (4 or 6) into t; the transport header's offset, CAPTURE_NO_PORTS,
 * or 0 for a header that is not there whole. */
static __always_inline __u32 capture_ip(const __u8 *d, __u32 n, __u32 off, __u8 fam, struct capture_tuple *t)
{
	if (off > CAPTURE_PARSE_LEN)
		return 0;
	t->family = fam;
	if (fam == 4) {
		if (off + 20 > n)
			return 0;
		t->proto = d[off + 9];
		__builtin_memcpy(t->src, d + off + 12, 4);
		__builtin_memcpy(t->dst, d + off + 16, 4);
		if ((d[off + 6] & 0x1f) | d[off + 7])
			return CAPTURE_NO_PORTS; /* a fragment after the first */
		return off + (d[off] & 0xf) * 4;
	}
	if (off + 40 > n)
		return 0;
	t->proto = d[off + 6];
	__builtin_memcpy(t->src, d + off + 8, 16);
	__builtin_memcpy(t->dst, d + off + 24, 16);
	return off + 40;
}

/* The 5-tuple of the innermost packet of the Ethernet frame in the copy
 * (its length in rec.caplen) into sc->t: through at most two
 * encapsulations (IP-in-IP, IPv6-in-IPv6, GUE). Everything is read from and
 * written to the scratch record, few values are held: the slow path's
 * registers, not its stack (see capture_key0). */
static __always_inline int capture_parse(struct capture_scratch *sc, __be16 gue_port)
{
	const __u8 *d = sc->rec.data;
	struct capture_tuple *t = &sc->t;
	__u32 off = 14, l4 = 0;
	__u8 fam;

	if (sc->rec.caplen < 14)
		return 0;
	if (d[12] == 0x08 && d[13] == 0x00)
		fam = 4;
	else if (d[12] == 0x86 && d[13] == 0xdd)
		fam = 6;
	else
		return 0;
#pragma clang loop unroll(disable)
	for (int level = 0; level < 3; level++) {
		l4 = capture_ip(d, sc->rec.caplen, off, fam, t);
		if (!l4)
			return 0;
		if (l4 > CAPTURE_PARSE_LEN)
			break;
		if (t->proto == IPPROTO_IPIP || t->proto == 41) {
			fam = t->proto == IPPROTO_IPIP ? 4 : 6;
			off = l4;
			continue;
		}
		if (t->proto != IPPROTO_UDP || l4 + 12 > sc->rec.caplen)
			break;
		/* As a __be16 reads it (little-endian target): no local
		 * whose address is taken, so no stack. */
		if ((__be16)(d[l4 + 2] | d[l4 + 3] << 8) != gue_port || (d[l4 + 8] & 0xc0) ||
		    (d[l4 + 9] != 4 && d[l4 + 9] != 41))
			break;
		fam = d[l4 + 9] == 4 ? 4 : 6;
		off = l4 + 12 + (d[l4 + 8] & 0x1f) * 4;
	}
	t->sport = t->dport = 0;
	if ((t->proto == IPPROTO_TCP || t->proto == IPPROTO_UDP) && l4 + 4 <= sc->rec.caplen && l4 <= CAPTURE_PARSE_LEN) {
		__builtin_memcpy(&t->sport, d + l4, 2);
		__builtin_memcpy(&t->dport, d + l4 + 2, 2);
	}
	return 1;
}

static __always_inline int capture_addr_eq(const __u8 *a, const __u8 *b, __u8 fam)
{
	const __u32 *x = (const void *)a, *y = (const void *)b;
	__u32 diff = x[0] ^ y[0];

	if (fam == 6)
		diff |= (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]);
	return diff == 0;
}

/* Does the filter take the packet? */
static __always_inline int capture_match(const struct capture_cfg *c, const struct capture_tuple *t)
{
	__u32 m = c->match;

	if (!m)
		return 1;
	if ((m & (CAPTURE_M_SRC | CAPTURE_M_DST)) && t->family != c->family)
		return 0;
	if ((m & CAPTURE_M_SRC) && !capture_addr_eq(t->src, c->src, c->family))
		return 0;
	if ((m & CAPTURE_M_DST) && !capture_addr_eq(t->dst, c->dst, c->family))
		return 0;
	if ((m & CAPTURE_M_PROTO) && t->proto != c->proto)
		return 0;
	if ((m & CAPTURE_M_SPORT) && t->sport != c->sport)
		return 0;
	if ((m & CAPTURE_M_DPORT) && t->dport != c->dport)
		return 0;
	return 1;
}

/* How many bytes to copy of a packet of len bytes: what is kept, and at
 * least what the parse reads. 0: capture nothing here. */
static __always_inline __u32 capture_want(const struct capture_cfg *c, __u32 point, __u32 len)
{
	if (c->points && !(c->points & (1U << (point & 31))))
		return 0;
	if ((__s64)READ_ONCE_U64(&c->remaining) <= 0)
		return 0;
	if (c->deadline_ns && bpf_ktime_get_ns() > c->deadline_ns)
		return 0;
	__u32 want = c->snaplen > CAPTURE_PARSE_LEN ? c->snaplen : CAPTURE_PARSE_LEN;
	if (want > len)
		want = len;
	if (want > CAPTURE_SNAP_MAX)
		want = CAPTURE_SNAP_MAX;
	return want < 14 ? 0 : want;
}

/* The copy in r (got bytes of a len-byte packet) goes to the ring if the
 * filter takes it and the bound allows. */
static __always_inline int capture_emit(struct capture_cfg *c, struct capture_scratch *s, __u32 got)
{
	struct capture_rec *r = &s->rec;

	__builtin_memset(&s->t, 0, sizeof(s->t));
	if (got > CAPTURE_SNAP_MAX || !capture_parse(s, c->gue_port) || !capture_match(c, &s->t))
		return 0;
	if (__sync_fetch_and_add(&c->remaining, -1) <= 0)
		return 0; /* another CPU took the last one */
	__u32 keep = c->snaplen < got ? c->snaplen : got;
	r->caplen = keep;
	r->ts_ns = bpf_ktime_get_ns();
	keep = r->caplen + CAPTURE_REC_HDR;
	if (keep > sizeof(*r))
		return 0;
	if (bpf_ringbuf_output(&capture_ring, r, keep, 0))
		__sync_fetch_and_add(&c->lost, 1);
	return 1;
}

/* The key of the one-element maps, in read-only data rather than on the
 * stack. The slow paths below keep no stack of their own: their frame adds
 * to the caller's in the verifier's 512-byte budget of a call chain, which
 * the mux's IPv6 program nearly fills. So nothing of theirs has its address
 * taken, and what must outlive a helper call is kept in the scratch record
 * (scalars) or looked up again (the maps' values), leaving at most four
 * values live across a call: the callee-saved registers. */
static volatile const __u32 capture_key0 = 0;

INLINE struct capture_cfg *capture_cfg_now(void)
{
	return bpf_map_lookup_elem(&capture_cfg, (const void *)&capture_key0);
}

INLINE struct capture_scratch *capture_scratch_now(void)
{
	return bpf_map_lookup_elem(&capture_scratch, (const void *)&capture_key0);
}

/* The second half of both slow paths: the copy in the scratch record
 * (want bytes, in rec.caplen) to the ring if the filter takes it. */
static __always_inline int capture_finish(void)
{
	struct capture_cfg *c = capture_cfg_now();
	struct capture_scratch *s = capture_scratch_now();

	if (!c || !s)
		return 0;
	return capture_emit(c, s, s->rec.caplen);
}

/* The slow paths, called only while capture is on. Global: verified once,
 * apart from the programs that call them. */
__noinline int capture_xdp_on(struct xdp_md *ctx, __u32 point)
{
	struct capture_cfg *c = capture_cfg_now();
	struct capture_scratch *s = capture_scratch_now();

	if (!c || !s || !c->enabled)
		return 0;
	s->rec.point = point;
	s->rec.ifindex = ctx->ingress_ifindex;
	s->rec.len = bpf_xdp_get_buff_len(ctx);
	__u32 want = capture_want(c, s->rec.point, s->rec.len);
	if (!want || want > CAPTURE_SNAP_MAX)
		return 0;
	s->rec.caplen = want;
	if (bpf_xdp_load_bytes(ctx, 0, s->rec.data, want))
		return 0;
	return capture_finish();
}

__noinline int capture_skb_on(struct __sk_buff *skb, __u32 point)
{
	struct capture_cfg *c = capture_cfg_now();
	struct capture_scratch *s = capture_scratch_now();

	if (!c || !s || !c->enabled)
		return 0;
	s->rec.point = point;
	s->rec.ifindex = skb->ifindex;
	s->rec.len = skb->len;
	__u32 want = capture_want(c, s->rec.point, s->rec.len);
	if (!want || want > CAPTURE_SNAP_MAX)
		return 0;
	s->rec.caplen = want;
	if (bpf_skb_load_bytes(skb, 0, s->rec.data, want))
		return 0;
	return capture_finish();
}

/* The hooks: one load and a branch while capture is off. */
INLINE void capture_xdp(struct xdp_md *ctx, __u32 point)
{
	if (capture_on)
		capture_xdp_on(ctx, point);
}

INLINE void capture_skb(struct __sk_buff *skb, __u32 point)
{
	if (capture_on)
		capture_skb_on(skb, point);
}

/* The mux's IPv6 path (mux6.h) has no mux-tx point: its program's frame
 * leaves less room than the capture function's frame needs under the
 * verifier's 512 bytes for a call chain (its packets are captured at
 * mux-rx, as they arrive). The IPv6 agent's points. Its benchmark builds call its programs from a
 * wrapper (bpf/bench/agent_bench.c), whose frame and theirs leave no room
 * for the capture function's under the verifier's 512 bytes for a call
 * chain: there the points are left out. The production programs, reached by
 * a tail call (no caller frame), have them. */
#ifdef BEAMER_BENCH
#define capture_skb6(skb, point) ((void)(skb))
#define capture_xdp6(ctx, point) ((void)(ctx))
#else
#define capture_skb6 capture_skb
#define capture_xdp6 capture_xdp
#endif

#endif
