// Package cheetahsim reproduces the Cheetah paper's two simulations with the
// product's own code (docs/strategy-cheetah.md):
//
//   - PCC: connections broken as the DIP set changes more and more often,
//     for Beamer as published (one previous owner per bucket, a fixed
//     window: the Beamer the Cheetah paper measured), this product's Beamer
//     (assign.RebalanceLimited and forwarding.HistoryRules, the controller's
//     bucket moves and histories, with holds as the agents report them) —
//     two systems, reported apart (beamer_models.go) — Maglev
//     (assign.MaglevTable) and Cheetah (the cookie names a server-table slot
//     that is never reused while a connection names it);
//   - imbalance: max/mean active connections per server under round robin
//     (one counter, or one per CPU as the mux keeps it) and under hashing
//     (a Beamer bucket table of 100 buckets per server), at 16/32/64 servers
//     and 20K–200K active connections.
package cheetahsim
