/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mux's own addresses, set at load time (pkg/dataplane): the source of
 * every outer header it writes, for both of its paths (mux.c, mux6.h).
 */
#ifndef BEAMER_MUX_ADDR_H
#define BEAMER_MUX_ADDR_H

#include "defs.h"

/* The mux's own address: source of every outer header. Set at load time. */
volatile const __be32 mux_addr;

/* The mux's own IPv6 address: source of every IPv6 outer header; all zero
 * when the mux has none (IPv6 VIPs are then dropped, counted). */
volatile const __be32 mux_addr6[4];

#endif
