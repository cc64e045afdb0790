package partition

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
)

// Figure is what one fault cost: the failover time (fault → the next
// publication any mux applied, a pair newer than every one applied
// before the fault; it includes the wait for the workload's next request,
// 0.2–0.7 s, and that request's own path), the operator's outage, and
// the mux lag of the publications during and just after it (the first
// mux to apply a pair → the last).
type Figure struct {
	Kind     Kind
	Failover time.Duration // -1: nothing published until the next fault
	// Ack is fault → the first acknowledgement of a request sent after
	// it, as the operator sees the outage (-1: none until the next fault).
	Ack  time.Duration
	Lags []time.Duration
}

func figures(faults []*Fault, applies []history.Apply, requests []history.Request) []Figure {
	first := map[uint64]time.Time{} // pair → the first time a mux applied it
	last := map[uint64]time.Time{}
	for _, a := range applies {
		w := a.Word()
		if t, ok := first[w]; !ok || a.At.Before(t) {
			first[w] = a.At
		}
		if a.At.After(last[w]) {
			last[w] = a.At
		}
	}
	var out []Figure
	for i, f := range faults {
		end := time.Now()
		if i+1 < len(faults) {
			end = faults[i+1].Injected
		}
		var before uint64
		for _, a := range applies {
			if a.At.Before(f.Injected) && a.Word() > before {
				before = a.Word()
			}
		}
		fig := Figure{Kind: f.Kind, Failover: -1, Ack: -1}
		for _, r := range requests {
			if r.Outcome == history.OK && r.Start.After(f.Injected) && r.End.Before(end) && (fig.Ack < 0 || r.End.Sub(f.Injected) < fig.Ack) {
				fig.Ack = r.End.Sub(f.Injected)
			}
		}
		next := time.Time{}
		for w, t := range first {
			if w > before && t.After(f.Injected) && t.Before(end) && (next.IsZero() || t.Before(next)) {
				next = t
			}
			if t.After(f.Injected) && t.Before(end) {
				fig.Lags = append(fig.Lags, last[w].Sub(t))
			}
		}
		if !next.IsZero() {
			fig.Failover = next.Sub(f.Injected)
		}
		out = append(out, fig)
	}
	return out
}

// Summarize is a table of failover time and mux lag per fault kind,
// median and worst.
func Summarize(figs []Figure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %6s %13s %13s %9s %9s %9s %9s\n", "fault", "count", "failover p50", "failover max", "ack p50", "ack max", "lag p50", "lag max")
	for _, k := range Kinds {
		var fo, ack, lag []time.Duration
		n, none := 0, 0
		for _, f := range figs {
			if f.Kind != k {
				continue
			}
			n++
			if f.Failover < 0 {
				none++
			} else {
				fo = append(fo, f.Failover)
			}
			if f.Ack >= 0 {
				ack = append(ack, f.Ack)
			}
			lag = append(lag, f.Lags...)
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-16s %6d %13s %13s %9s %9s %9s %9s", k, n, median(fo), worst(fo), median(ack), worst(ack), median(lag), worst(lag))
		if none > 0 {
			fmt.Fprintf(&b, "  (%d with no publication before the next fault)", none)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ds))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m.Round(time.Millisecond).String()
}

func worst(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	return slices.Max(ds).Round(time.Millisecond).String()
}
