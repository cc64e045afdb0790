package dpbench

import (
	"fmt"
	"strings"
)

// Markdown renderings of a report, for the generated docs/performance.md
// (`beamer-lab bench doc`): every figure in that document comes from here.

func thousands(n int) string { return Thousands(fmt.Sprint(n)) }

// Thousands puts commas between the thousands of a decimal integer.
func Thousands(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func cell(f *Figure) (string, string, string) {
	if f == nil {
		return "–", "–", "–"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", f.NsMedian, f.NsMin, f.NsMax), fmt.Sprintf("%.0f", f.NsNet), fmt.Sprintf("%.0f", f.NsNetQuiet)
}

// ProgramTable renders the rows whose name passes keep.
func (r *Report) ProgramTable(keep func(name string) bool) string {
	var b strings.Builder
	head := "| program | flows | buckets | batched ns, median (min–max) | net | quiet | per packet ns, median (min–max) | net | quiet | Mpps/core (batched) | path verified |"
	sep := "|---|---|---|---|---|---|---|---|---|---|---|"
	compare := r.Baseline != "" || r.AgentBaseline != ""
	if compare {
		head += " baseline batched ns | net | quiet | baseline verified |"
		sep += "---|---|---|---|"
	}
	fmt.Fprintln(&b, head)
	fmt.Fprintln(&b, sep)
	for _, p := range r.Programs {
		if !keep(p.Name) {
			continue
		}
		buckets := ""
		if p.Buckets > 0 {
			buckets = thousands(p.Buckets)
		}
		pp, ppNet, ppQuiet := cell(p.PerPacket)
		verified := "–"
		if takesPath(p.Name) {
			verified = "no"
			if p.PathVerified && (p.PerPacket == nil || p.PerPacket.PathVerified) {
				verified = "yes"
			}
		}
		batched, bNet, bQuiet, mpps := fmt.Sprintf("%.0f (%.0f–%.0f)", p.NsPerPacket, p.NsMin, p.NsMax), fmt.Sprintf("%.0f", p.NsNet), fmt.Sprintf("%.0f", p.NsNetQuiet), fmt.Sprintf("%.1f", p.MppsPerCore)
		if p.NsPerPacket == 0 { // measured per packet only (the strip floors)
			batched, bNet, bQuiet, mpps = "–", "–", "–", "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", p.Name, thousands(p.Flows), buckets,
			batched, bNet, bQuiet, pp, ppNet, ppQuiet, mpps, verified)
		if compare {
			bb, bNet, bQuiet := cell(p.Baseline)
			ok := "–"
			if p.Baseline != nil {
				ok = fmt.Sprint(p.Baseline.PathVerified)
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s |", bb, bNet, bQuiet, ok)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// MuxTable is the mux's rows and the XDP floors.
func (r *Report) MuxTable() string {
	return r.ProgramTable(func(n string) bool {
		return !strings.HasPrefix(n, "agent") && n != "empty-tc" && n != "decap-floor" && n != "decap-floor-xdp" && !strings.HasPrefix(n, "strip-floor")
	})
}

// AgentTable is the agent's rows (tc and XDP) and their floors.
func (r *Report) AgentTable() string {
	return r.ProgramTable(func(n string) bool {
		return strings.HasPrefix(n, "agent") || n == "empty-tc" || n == "decap-floor" || n == "decap-floor-xdp" || n == "empty" || strings.HasPrefix(n, "strip-floor")
	})
}

// Method describes how the figures of this report were taken.
func (r *Report) Method() string {
	return fmt.Sprintf("batched: one BPF_PROG_TEST_RUN of %s repetitions of the benchmark build per trial; per packet: %s test runs "+
		"of the production program with repeat 1 per trial (mean of the runs not over ten times the trial's median); median (min–max) of %d trials; kernel-reported time; "+
		"net: each trial minus the empty program of the same trial, median; quiet: the quickest trial minus the empty program's quickest",
		thousands(r.Repeat), thousands(r.PerPacket), r.Trials)
}

// Target is one of issue 18's targets checked against this run: the
// figures of both methods, median net and quiet net ("median / quiet").
type Target struct {
	What, Batched, PerPacket, Verdict string
}

// verdictOf judges a target on the median figures of both methods first,
// then on the quiet ones, and says which held.
func verdictOf(medianB, medianP, quietB, quietP bool) string {
	switch {
	case medianB && medianP:
		return "met (both methods)"
	case quietB && quietP:
		return "met on the quiet figures (both methods), not on the medians"
	case medianB || medianP || quietB || quietP:
		return "met by one method only"
	}
	return "not met"
}

// Targets checks the mux and agent targets on both methods.
func (r *Report) Targets() []Target {
	var out []Target
	netOf := func(name string, buckets int) (*Row, bool) {
		p := r.find(name, 0, buckets)
		return p, p != nil && p.PerPacket != nil
	}
	pair := func(median, quiet float64, format string) string {
		return fmt.Sprintf(format+" / "+format, median, quiet)
	}
	for _, c := range []struct {
		buckets int
		limit   float64
	}{{1000, 60}, {1_000_000, 110}} {
		if p, ok := netOf("beamer", c.buckets); ok {
			out = append(out, Target{What: fmt.Sprintf("Beamer ≤ %.0f ns net at %s buckets", c.limit, thousands(c.buckets)),
				Batched: pair(p.NsNet, p.NsNetQuiet, "%.0f"), PerPacket: pair(p.PerPacket.NsNet, p.PerPacket.NsNetQuiet, "%.0f"),
				Verdict: verdictOf(p.NsNet <= c.limit, p.PerPacket.NsNet <= c.limit, p.NsNetQuiet <= c.limit, p.PerPacket.NsNetQuiet <= c.limit)})
		}
	}
	if p := r.find("maglev", 1_000_000, 0); p != nil && p.PerPacket != nil {
		// Issue 18 measured 451–526 ns net per packet before the mux work.
		out = append(out, Target{What: "Maglev at 1M flows in random order no slower than before (≤ 526 ns net per packet, issue 18)",
			Batched: pair(p.NsNet, p.NsNetQuiet, "%.0f"), PerPacket: pair(p.PerPacket.NsNet, p.PerPacket.NsNetQuiet, "%.0f"),
			Verdict: verdictOf(p.PerPacket.NsNet <= 526, p.PerPacket.NsNet <= 526, p.PerPacket.NsNetQuiet <= 526, p.PerPacket.NsNetQuiet <= 526)})
	}
	if mg, lru := r.find("maglev", 1_000_000, 0), r.find("maglev-lru", 1_000_000, 0); mg != nil && lru != nil && mg.PerPacket != nil && lru.PerPacket != nil {
		// Issue 27: the connection table at ≤ 0.6 × the LRU hash it
		// replaced, both in the same run (maglevRow).
		x := r.Ratios
		out = append(out, Target{What: "Maglev at 1M flows ≤ 0.6 × the LRU connection table it replaced, same run (net / net, issue 27)",
			Batched: pair(x.MaglevOverLRU1M, x.MaglevOverLRU1MQuiet, "%.2f ×"), PerPacket: pair(x.MaglevOverLRU1MPerPacket, x.MaglevOverLRU1MPerPacketQuiet, "%.2f ×"),
			Verdict: verdictOf(x.MaglevOverLRU1M <= 0.6, x.MaglevOverLRU1MPerPacket <= 0.6, x.MaglevOverLRU1MQuiet <= 0.6, x.MaglevOverLRU1MPerPacketQuiet <= 0.6)})
	}
	// Issue 18 sets no number for the agent: it asks to measure and cut
	// the fast path, which it found at 6.9 × an empty tc program.
	ratio := func(name, empty, what string, before float64) {
		p, e := r.find(name, 0, 0), r.find(empty, 0, 0)
		if p == nil || e == nil || p.PerPacket == nil || e.PerPacket == nil {
			return
		}
		a, b := p.NsPerPacket/e.NsPerPacket, p.PerPacket.NsMedian/e.PerPacket.NsMedian
		v := "measured"
		if before > 0 {
			v = "not cut"
			if a < before && b < before {
				v = fmt.Sprintf("cut from %.1f ×", before)
			}
		}
		out = append(out, Target{What: what, Batched: fmt.Sprintf("%.1f ×", a), PerPacket: fmt.Sprintf("%.1f ×", b), Verdict: v})
	}
	ratio("agent-local", "empty-tc", "agent fast path (tc) over an empty tc program (issue 18 found 6.9 ×)", 6.9)
	ratio("agent-xdp-local", "empty", "agent fast path (XDP) over an empty XDP program", 0)
	return append(out, r.agentFloorTargets()...) // agent_floor.go
}

// FloorTarget is one of issue 27's targets: this build's ratio and, in
// the compare mode, the baseline object's (today's), "median / quiet".
type FloorTarget struct{ What, Before, Now, Verdict string }

// FloorTargetTable renders FloorTargets.
func (r *Report) FloorTargetTable() string {
	var b strings.Builder
	fmt.Fprintln(&b, "| target (per packet, net over net) | baseline object, median / quiet | this build, median / quiet | |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, t := range r.FloorTargets() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.What, t.Before, t.Now, t.Verdict)
	}
	return b.String()
}

// FloorTargets are issue 27's: the mux's rows per packet, net, over the
// honest floor (encap-floor-plain: fixed IP-in-IP + 16-byte option, no
// undo), median and quiet; with a baseline, today's object's ratio too.
func (r *Report) FloorTargets() []FloorTarget {
	var out []FloorTarget
	floor := r.find("encap-floor-plain", 0, 0)
	if floor == nil || floor.PerPacket == nil || floor.PerPacket.NsNet <= 0 || floor.PerPacket.NsNetQuiet <= 0 {
		return nil
	}
	for _, c := range []struct {
		name    string
		buckets int
		limit   float64
		what    string
		bound   func(buckets int, floor *Figure) string // the rows that bound the target, if any
	}{
		{"beamer", 1000, 2, "Beamer ≤ 2 × the plain encapsulation floor at 1,000 buckets (per packet, net / net)", r.minimalBound},
		{"beamer", 1_000_000, 2, "Beamer ≤ 2 × the plain encapsulation floor at 1,000,000 buckets, defragmented", nil},
		{"beamer-scattered", 1_000_000, 4, "scattered 1,000,000 buckets ≤ 4 × the plain floor", r.randomReadBound},
		{"beamer-moved4", 1000, 3, "a bucket with 4 previous owners ≤ 3 × the plain floor", r.movedMinimalBound},
	} {
		p := r.find(c.name, 0, c.buckets)
		if p == nil || p.PerPacket == nil {
			continue
		}
		m, q := p.PerPacket.NsNet/floor.PerPacket.NsNet, p.PerPacket.NsNetQuiet/floor.PerPacket.NsNetQuiet
		before := "–"
		if b := p.BaselinePerPacket; b != nil {
			before = fmt.Sprintf("%.1f × / %.1f ×", b.NsNet/floor.PerPacket.NsNet, b.NsNetQuiet/floor.PerPacket.NsNetQuiet)
		}
		v := "not met"
		switch {
		case m <= c.limit:
			v = "met"
		case q <= c.limit:
			v = "met on the quiet figure only"
		}
		if c.bound != nil {
			v += c.bound(c.buckets, floor.PerPacket)
		}
		out = append(out, FloorTarget{What: c.what, Before: before, Now: fmt.Sprintf("%.1f × / %.1f ×", m, q), Verdict: v})
	}
	return out
}

// randomReadBound says what the floor plus one random read of a table of
// b 16-bit entries costs over the floor (encap-floor-random), if measured:
// a target below it cannot be met by any program that reads the table.
func (r *Report) randomReadBound(b int, floor *Figure) string {
	p := r.find("encap-floor-random", 0, b)
	if p == nil || p.PerPacket == nil || p.PerPacket.NsNet <= 0 {
		return ""
	}
	return fmt.Sprintf("; the floor plus one random read of the table alone (`encap-floor-random`): %.1f × / %.1f ×", p.PerPacket.NsNet/floor.NsNet, p.PerPacket.NsNetQuiet/floor.NsNetQuiet)
}

// minimalBound says what the least a Beamer mux does (beamer-floor), and
// with a counter and per-server MACs (beamer-floor-counted), cost over the
// floor at b buckets, if measured.
func (r *Report) minimalBound(b int, floor *Figure) string {
	out := ""
	for _, c := range []struct{ name, what string }{
		{"beamer-floor", "the least a Beamer mux does, with no counter, next hop, VIP table or other check"},
		{"beamer-floor-counted", "with one counter and the server's MAC by id"},
	} {
		p := r.find(c.name, 0, b)
		if p == nil || p.PerPacket == nil || p.PerPacket.NsNet <= 0 {
			continue
		}
		out += fmt.Sprintf("; %s (`%s`): %.1f × / %.1f ×", c.what, c.name, p.PerPacket.NsNet/floor.NsNet, p.PerPacket.NsNetQuiet/floor.NsNetQuiet)
	}
	return out
}

// movedMinimalBound says what the least a Beamer mux does for a bucket
// with 4 previous owners (beamer-floor-moved4) costs over the floor at b
// buckets, if measured.
func (r *Report) movedMinimalBound(b int, floor *Figure) string {
	p := r.find("beamer-floor-moved4", 0, b)
	if p == nil || p.PerPacket == nil || p.PerPacket.NsNet <= 0 {
		return ""
	}
	return fmt.Sprintf("; the least a Beamer mux does for such a bucket, its history and previous owners read from plain arrays, with no counter, next hop, VIP table or other check (`beamer-floor-moved4`): %.1f × / %.1f ×", p.PerPacket.NsNet/floor.NsNet, p.PerPacket.NsNetQuiet/floor.NsNetQuiet)
}

// TargetTable renders Targets.
func (r *Report) TargetTable() string {
	var b strings.Builder
	fmt.Fprintln(&b, "| target | batched, median / quiet | per packet, median / quiet | |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, t := range r.Targets() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.What, t.Batched, t.PerPacket, t.Verdict)
	}
	return b.String()
}

// LiveTable renders the live rows.
func (r *Report) LiveTable() string {
	var b strings.Builder
	fmt.Fprintln(&b, "| strategy | table | sends by | polls | sent | refused at the mux's ring | forwarded | refused at the sink's ring | forwarded Mpps | mux program ns/packet | mux CPU ns/packet | mux CPU busy | generator CPU ns/packet | sink CPU ns/packet |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, l := range r.Live {
		polls := fmt.Sprintf("threaded: generator CPU %d, mux CPU %d, sink CPU %d", l.GenCPU, l.MuxCPU, l.SinkCPU)
		sends := "redirect to the sink's link"
		if l.TX {
			sends = "XDP_TX to the generator's end"
		}
		mux, busy, sink := fmt.Sprintf("%.0f", l.MuxNs), fmt.Sprintf("%.0f %%", 100*l.MuxBusy), fmt.Sprintf("%.0f", l.SinkNs)
		if l.Softirq {
			polls, mux, busy, sink = "softirq, all on CPU 0", "(in the generator's)", "–", "(in the generator's)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.0f | %s | %s | %.0f | %s |\n", l.Strategy, thousands(l.Buckets), sends, polls,
			thousands(l.Sent), thousands(int(l.DropsToMux)), thousands(int(l.Forwarded)), thousands(int(l.DropsToSink)),
			l.ForwardedMpps, l.ProgramNs, mux, busy, l.GenNs, sink)
	}
	return b.String()
}

// LiveFigure picks a figure of the live rows for the prose: the first
// threaded (or, with softirq, the first softirq) row of strategy that
// redirects to the sink's link.
func (r *Report) LiveFigure(strategy string, softirq bool) *LiveRow {
	for i := range r.Live {
		if l := &r.Live[i]; l.Strategy == strategy && l.Softirq == softirq && !l.TX {
			return l
		}
	}
	return nil
}

// LiveTXFigure picks the XDP_TX row of strategy (live_tx.go).
func (r *Report) LiveTXFigure(strategy string) *LiveRow {
	for i := range r.Live {
		if l := &r.Live[i]; l.Strategy == strategy && l.TX {
			return l
		}
	}
	return nil
}

// Row finds a row for the prose (flows, buckets 0: any).
func (r *Report) Row(name string, flows, buckets int) *Row { return r.find(name, flows, buckets) }
