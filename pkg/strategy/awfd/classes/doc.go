// Package classes is Spotlight's adaptive weighted flow dispatching (AWFD,
// shared/papers/spotlight-awfd.txt §III-B) as Beamer runs it:
//
//   - quantise.go: available capacities → integer weights 0..m
//     (w = ⌊m·A/max A⌋); servers of equal weight form a priority class.
//   - record.go: the class record the controller publishes to the muxes
//     (class ranges and per-class server lists), its encoding, validation
//     and bounds. It lives outside the generation ring: 4 updates a second
//     must not grow the ring, and a mux that misses updates keeps using
//     the last record it has (a stale record is still a valid one).
//   - select.go: Algorithm 1, the choice a mux makes for a new connection
//     (class by hash range, server within the class by hash), identical to
//     bpf/strategy/awfd.h and checked against testdata/awfd-vectors.json
//     by both.
//   - tracker.go: the controller's view of every server's capacity across
//     missed polls (kept for a bounded time, then decayed).
package classes
