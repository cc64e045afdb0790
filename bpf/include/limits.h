/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Every limit the programs are compiled with, in one place: map sizes, the
 * most VIPs, tables, servers, previous owners and port ranges they hold.
 *
 * Go does not copy these numbers: pkg/dataplane (limits.go) reads them from
 * the loaded collection spec — map sizes from the maps, array lengths and
 * layouts from the BTF of the maps' value types, and the one limit that is
 * neither (the chain length) from the constant limit_max_chain (mux_maps.h) — and TestLimitsFromSpec
 * checks the limits other packages validate against (forwarding.MaxChain,
 * forwarding.MaxVIPRanges, awfd.MaxServers) against the same spec.
 */
#ifndef BEAMER_LIMITS_H
#define BEAMER_LIMITS_H

/* ---- The mux ---- */
#define MAX_VIPS 1024          /* VIPs over all instances; one port set each */
#define MAX_TABLES 256         /* instances (table slots) */
#define SERVER_TABLE_SIZE 65536 /* server ids of one instance */
#define MAX_SERVER_STATS 16384 /* servers counted apart (all instances): vip_traffic.h */
#define VIP_FRONT_BITS 11
#define VIP_FRONT_LINES (1 << VIP_FRONT_BITS) /* 2048 lines for at most MAX_VIPS (1024) */
#define VIP_RECORDS (4 * MAX_VIPS)            /* live ones, and retired ones awaiting a grace period */
#define VIP_RECORD_RANGES 4                   /* service port ranges the record holds */
#define PORT_SET_RANGES 15                    /* ... and one overflow entry (ports.h): forwarding.MaxVIPRanges */
#define NEXTHOP_CACHE_SLOTS 4096              /* power of two */
#define NEXTHOP6_CACHE_SLOTS 1024             /* power of two */
#define PRISM_LEARNED_ENTRIES 65536           /* connections strategy prism remembers (LRU) */
#define CHEETAH_MAX_PICKS 1024                /* a Cheetah instance's pick list */
#define CHEETAH_LOAD_ENTRIES 65536            /* server loads for power of two choices */
#define AWFD_MAX_CLASSES 16
#define AWFD_MAX_SERVERS 1024 /* awfd.MaxServers */

/* ---- The wire ---- */
#define BEAMER_MAX_CHAIN 6 /* previous owners an option carries at most: forwarding.MaxChain */

/* ---- The agent ---- */
#define AGENT_MAX_VIPS 1024     /* IPv4 VIPs, and as many IPv6 ones; Cheetah VIPs among them */
#define AGENT_MAX_PREFIXES 1024 /* trusted source prefixes per family */

/* ---- Both ---- */
#define PORT_SPACE 65536        /* arrays indexed by a UDP port */
#define CAPTURE_SNAP_MAX 4096   /* bytes of a packet a capture record holds at most (--snaplen) */
#define CAPTURE_RING_BYTES (1 << 20)
#define CSUM_MAX_BYTES 4096 /* the most payload a checksum is verified over (csum.h) */

#endif
