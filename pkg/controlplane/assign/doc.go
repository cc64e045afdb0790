// Package assign decides which server owns each bucket of a load-balancer
// instance. It is pure computation: no I/O, no clocks, no randomness that is
// not derived from its inputs, so the controller, the simulator and the tests
// get the same answer for the same input.
//
// It holds four assignment algorithms, all producing a bucket (or lookup
// table entry) → server mapping so they can be compared on the same footing:
//
//   - stable hashing (Beamer §4.1, §4.5): the controller keeps a fixed number
//     of buckets and moves as few of them as possible with the greedy
//     Rebalance loop; a Defrag plan then slowly restores contiguous ranges
//     (Beamer appendix A1) so a hardware data plane needs few range rules;
//   - Maglev hashing (Maglev §3.4): MaglevTable fills a prime-sized lookup
//     table from per-backend permutations, with weights;
//   - consistent hashing on a Karger ring with virtual nodes (RingTable);
//   - rendezvous (highest random weight) hashing (RendezvousTable).
//
// Metrics shared by all of them (Imbalance, RangeRules, Fragmentation) live
// in metrics.go.
package assign
