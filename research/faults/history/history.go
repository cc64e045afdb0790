// Package history records what a fault-injection run saw — every
// management request's outcome and every table each mux applied, with
// timestamps — and checks it against the properties the control plane
// promises under partitions, kills and pauses (issue 26):
//
//   - unique-table: no (instance, incarnation, generation) names two
//     tables (two digests), across all muxes and the store;
//   - monotonic: no mux run ever applies an older (incarnation,
//     generation) than one it applied before;
//   - acked-durable: every request reported ok is in the final state,
//     unless a later request on the same key reported unknown replaced
//     it (requests run one at a time: the last acknowledged value of a
//     key, or an unknown one after it, is the only final value allowed);
//   - failed-absent: no request reported failed is in the final state:
//     a final value outside what acknowledged and unknown requests
//     allow, equal to a failed request's, names that request;
//   - converged: after healing, every mux runs the store's final table
//     (same pair, same digest) within a bound, and applies nothing else
//     after it;
//   - no-broken: 0 broken connections through the VIP.
//
// The checker reads a History and nothing else, so it is tested with
// crafted histories (history_test.go), each property shown to fail on a
// violation and pass on a clean run.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Outcome is what the caller of a request was told.
type Outcome int

const (
	OK      Outcome = iota // the request was acknowledged
	Failed                 // the request returned an error: it must have no effect
	Unknown                // no answer (a timeout): it may or may not have taken effect
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Absent is the value of a key the state does not hold (a removed server).
const Absent = ""

// Request is one management request (one `beamer ctl` call).
type Request struct {
	ID int
	Op string // as run, for the report: "add 1026", "weight 1025 3"
	// Key is what the request changes ("server/1026/weight") and Value
	// what it sets it to (Absent: removed). The workload gives every
	// request's value so that the final state tells which request won.
	Key, Value string
	Start, End time.Time
	Outcome    Outcome
	// Generation is the generation the change was published at when
	// Outcome is OK (as reported, or read from the store right after: the
	// rig says which), 0 if not known.
	Generation uint32
	Err        string
}

// Apply is one table a mux installed.
type Apply struct {
	Mux string // the mux's name
	// Run tells the mux's processes apart: a restarted mux starts afresh
	// and may load an older state only if the store holds one.
	Run                     string
	At                      time.Time
	Instance                string
	Incarnation, Generation uint32
	Digest                  string
}

// Word is (incarnation, generation) as one number, the order muxes and
// agents compare (pkg/controlplane/ring.Pair.Word).
func (a Apply) Word() uint64 { return uint64(a.Incarnation)<<32 | uint64(a.Generation) }

func (a Apply) pair() string { return fmt.Sprintf("%d@%d", a.Generation, a.Incarnation) }

// Final is the store after healing.
type Final struct {
	HealedAt time.Time // when the last fault was healed
	Instance string
	// The store's latest pair and the digest of the table it names.
	Incarnation, Generation uint32
	Digest                  string
	// State is the value of every key the workload touched, as read from
	// the store after healing (a key missing from the map is Absent).
	State map[string]string
	// Initial is the value of those keys before the workload.
	Initial map[string]string
}

// History is everything a run recorded.
type History struct {
	Requests []Request
	Applies  []Apply
	Muxes    []string // the muxes that must converge
	Final    Final
	// Bound is how long after HealedAt every mux must run the final table.
	Bound time.Duration
	// Broken counts connections through the VIP that broke (reset, timed
	// out or answered wrongly); Connections is how many were watched.
	Broken, Connections int
}

// Violation is one property broken, with what shows it.
type Violation struct {
	Property string
	Detail   string
}

func (v Violation) String() string { return v.Property + ": " + v.Detail }

// Properties are the names Check reports, in its order.
var Properties = []string{"unique-table", "monotonic", "acked-durable", "failed-absent", "converged", "no-broken"}

// Check returns every violation of the properties in h (none: the run
// was clean).
func Check(h History) []Violation {
	var out []Violation
	out = append(out, uniqueTables(h)...)
	out = append(out, monotonic(h)...)
	out = append(out, keyVerdicts(h)...)
	out = append(out, converged(h)...)
	if h.Broken != 0 {
		out = append(out, Violation{"no-broken", fmt.Sprintf("%d of %d connections through the VIP broke", h.Broken, h.Connections)})
	}
	return out
}

// Summary is a one-line account of h, for logs.
func Summary(h History) string {
	n := map[Outcome]int{}
	for _, r := range h.Requests {
		n[r.Outcome]++
	}
	return fmt.Sprintf("%d requests (%d ok, %d failed, %d unknown), %d tables applied by %d muxes, final %d@%d, %d/%d connections broken",
		len(h.Requests), n[OK], n[Failed], n[Unknown], len(h.Applies), len(h.Muxes), h.Final.Generation, h.Final.Incarnation, h.Broken, h.Connections)
}

func uniqueTables(h History) []Violation {
	type key struct {
		instance string
		word     uint64
	}
	seen := map[key]Apply{}
	all := h.Applies
	if h.Final.Digest != "" {
		all = append(slices.Clip(all), Apply{Mux: "store", Instance: h.Final.Instance, Incarnation: h.Final.Incarnation, Generation: h.Final.Generation, Digest: h.Final.Digest})
	}
	var out []Violation
	reported := map[key]bool{}
	for _, a := range all {
		k := key{a.Instance, a.Word()}
		first, ok := seen[k]
		if !ok {
			seen[k] = a
			continue
		}
		if first.Digest != a.Digest && !reported[k] {
			reported[k] = true
			out = append(out, Violation{"unique-table", fmt.Sprintf("instance %s %s names two tables: %s on %s, %s on %s",
				a.Instance, a.pair(), first.Digest, first.Mux, a.Digest, a.Mux)})
		}
	}
	return out
}

func monotonic(h History) []Violation {
	type run struct{ mux, run, instance string }
	last := map[run]Apply{}
	var out []Violation
	for _, a := range h.Applies {
		k := run{a.Mux, a.Run, a.Instance}
		if prev, ok := last[k]; ok && a.Word() < prev.Word() {
			out = append(out, Violation{"monotonic", fmt.Sprintf("mux %s (run %s) applied %s at %s after %s at %s",
				a.Mux, a.Run, a.pair(), a.At.Format(time.StampMilli), prev.pair(), prev.At.Format(time.StampMilli))})
		}
		if prev, ok := last[k]; !ok || a.Word() >= prev.Word() {
			last[k] = a
		}
	}
	return out
}

// keyVerdicts checks the final value of every key the requests touched.
// Requests run one at a time, so a key's final value must be the value of
// its last acknowledged request (the initial value if none), or that of
// a request reported unknown after it. A value outside that set is
// either a failed request that took effect (failed-absent: it names the
// request) or an acknowledged change lost (acked-durable).
func keyVerdicts(h History) []Violation {
	var keys []string
	for _, r := range h.Requests {
		if !slices.Contains(keys, r.Key) {
			keys = append(keys, r.Key)
		}
	}
	var out []Violation
	for _, key := range keys {
		var lastOK *Request
		for i, r := range h.Requests {
			if r.Key == key && r.Outcome == OK && (lastOK == nil || r.Start.After(lastOK.Start)) {
				lastOK = &h.Requests[i]
			}
		}
		allowed := []string{h.Final.Initial[key]}
		if lastOK != nil {
			allowed = []string{lastOK.Value}
		}
		after := func(r Request) bool { return lastOK == nil || r.Start.After(lastOK.Start) }
		for _, r := range h.Requests {
			if r.Key == key && r.Outcome == Unknown && after(r) {
				allowed = append(allowed, r.Value)
			}
		}
		got := h.Final.State[key]
		if slices.Contains(allowed, got) {
			continue
		}
		failed := slices.IndexFunc(h.Requests, func(r Request) bool {
			return r.Key == key && r.Outcome == Failed && r.Value == got && after(r)
		})
		switch {
		case failed >= 0:
			r := h.Requests[failed]
			out = append(out, Violation{"failed-absent", fmt.Sprintf("request %d (%s) was reported failed (%s), yet the final state has %s=%q, which no request acknowledged or unknown after %s explains",
				r.ID, r.Op, r.Err, key, got, describe(lastOK))})
		case lastOK != nil:
			out = append(out, Violation{"acked-durable", fmt.Sprintf("request %d (%s) was acknowledged (store at generation %d), but the final state has %s=%q, not %q",
				lastOK.ID, lastOK.Op, lastOK.Generation, key, got, lastOK.Value)})
		default:
			out = append(out, Violation{"acked-durable", fmt.Sprintf("the final state has %s=%q, which neither the initial state (%q) nor any request explains",
				key, got, h.Final.Initial[key])})
		}
	}
	return out
}

func describe(r *Request) string {
	if r == nil {
		return "the initial state"
	}
	return fmt.Sprintf("the last acknowledged request %d (%s)", r.ID, r.Op)
}

func converged(h History) []Violation {
	f := h.Final
	var out []Violation
	deadline := f.HealedAt.Add(h.Bound)
	for _, m := range h.Muxes {
		var mine []Apply
		for _, a := range h.Applies {
			if a.Mux == m && a.Instance == f.Instance {
				mine = append(mine, a)
			}
		}
		slices.SortStableFunc(mine, func(a, b Apply) int { return a.At.Compare(b.At) })
		reached := slices.IndexFunc(mine, func(a Apply) bool {
			return a.Incarnation == f.Incarnation && a.Generation == f.Generation && a.Digest == f.Digest
		})
		switch {
		case reached < 0:
			out = append(out, Violation{"converged", fmt.Sprintf("mux %s never applied the store's final table %d@%d (%s); last applied: %s",
				m, f.Generation, f.Incarnation, f.Digest, lastOf(mine))})
		case mine[reached].At.After(deadline):
			out = append(out, Violation{"converged", fmt.Sprintf("mux %s applied the final table %v after healing, bound %v",
				m, mine[reached].At.Sub(f.HealedAt).Round(time.Millisecond), h.Bound)})
		default:
			for _, a := range mine[reached+1:] {
				if a.Word() != mine[reached].Word() || a.Digest != f.Digest {
					out = append(out, Violation{"converged", fmt.Sprintf("mux %s applied %s (%s) after the final table", m, a.pair(), a.Digest)})
					break
				}
			}
		}
	}
	return out
}

func lastOf(as []Apply) string {
	if len(as) == 0 {
		return "nothing"
	}
	a := as[len(as)-1]
	return fmt.Sprintf("%s (%s) at %s", a.pair(), a.Digest, a.At.Format(time.StampMilli))
}

// Report is a human account of vs, one line each.
func Report(vs []Violation) string {
	if len(vs) == 0 {
		return "history clean: " + strings.Join(Properties, ", ")
	}
	lines := make([]string, len(vs))
	for i, v := range slices.SortedStableFunc(slices.Values(vs), func(a, b Violation) int {
		return cmp.Compare(slices.Index(Properties, a.Property), slices.Index(Properties, b.Property))
	}) {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}
