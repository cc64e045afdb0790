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
// before the fault) and the mux lag of the publications during and just
// after it (the first mux to apply a pair → the last).
type Figure struct {
	Kind     Kind
	Failover time.Duration // -1: nothing published until the next fault
	Lags     []time.Duration
}

func figures(faults []*Fault, applies []history.Apply) []Figure {
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
		fig := Figure{Kind: f.Kind, Failover: -1}
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
	fmt.Fprintf(&b, "%-16s %6s %14s %14s %12s %12s\n", "fault", "count", "failover p50", "failover max", "lag p50", "lag max")
	for _, k := range Kinds {
		var fo, lag []time.Duration
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
			lag = append(lag, f.Lags...)
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-16s %6d %14s %14s %12s %12s", k, n, median(fo), worst(fo), median(lag), worst(lag))
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
	return s[len(s)/2].Round(time.Millisecond).String()
}

func worst(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	return slices.Max(ds).Round(time.Millisecond).String()
}
