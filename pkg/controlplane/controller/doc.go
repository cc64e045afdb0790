// Package controller is Beamer's controller (§4.5): the only writer of the
// control store. It keeps, per load-balancer instance, the DIP records
// ("dips", read by the controller only), the server-id records ("id") and
// the mux ring, and runs the operations of `beamer ctl`: create and delete
// instances, add, remove, re-weight and drain DIPs. It probes DIPs and moves
// buckets away from dead ones.
//
// Crash safety comes from one rule: every operation first records its
// intent in "dips" with a single atomic commit, and everything after that
// is done by Reconcile, which derives the id records and the next mux-ring
// generation from "dips" and the published ring, and is idempotent. A
// controller killed at any point is replaced (or restarted) by one that
// runs Reconcile on every instance before anything else, which rolls the
// interrupted operation forward.
//
// Only the elected controller writes: Run campaigns in the store and hands
// the Controller a fenced store, so a deposed controller's writes fail.
package controller
