package lab

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints results as a table, ours beside the paper's.
func WriteTable(w io.Writer, results []*Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tstrategy\tconnections\tbroken\tbroken %\tsubflows est/exp\tchained pkts\tmean Gb/s\tFCT p50/p99 ms\tflood SYN/s")
	for _, r := range results {
		sub, flood := "-", "-"
		if r.SubflowsExpected > 0 {
			sub = fmt.Sprintf("%d/%d", r.SubflowsEstablished, r.SubflowsExpected)
		}
		if r.Flood != nil {
			flood = fmt.Sprintf("%.0f (asked %d)", r.Flood.AchievedPPS, r.Flood.AskedPPS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\t%d\t%.2f\t%.0f/%.0f\t%s\n", r.label(), r.Strategy, r.Connections,
			r.Broken, r.BrokenPct, sub, r.ChainedPackets, r.MeanGbps, r.FCTMedianMs, r.FCTP99Ms, flood)
	}
	tw.Flush()
	seen := map[string]bool{}
	for _, r := range results {
		if r.Paper.Source == "" || seen[r.Paper.Source] {
			continue
		}
		seen[r.Paper.Source] = true
		fmt.Fprintf(w, "\npaper, %s\n  setup:    %s\n  Beamer:   %s\n  Stateful: %s\n", r.Paper.Source, r.Paper.Setup, r.Paper.Beamer, r.Paper.Stateful)
	}
	for _, r := range results {
		r.writeDetails(w)
	}
}

// label names the run: the scenario, and for removals how many.
func (r *Result) label() string {
	if r.Parameters.Removed > 0 && (r.Scenario == "affinity" || r.Scenario == "synflood") {
		return fmt.Sprintf("%s (-%d srv)", r.Scenario, r.Parameters.Removed)
	}
	return r.Scenario
}

// writeDetails prints what a table row cannot: why connections broke,
// where traffic went, chained packets per server.
func (r *Result) writeDetails(w io.Writer) {
	var lines []string
	if len(r.BrokenReasons) > 0 {
		lines = append(lines, "broken: "+joinCounts(r.BrokenReasons))
	}
	if len(r.BrokenByKind) > 0 {
		lines = append(lines, "broken by kind of connection: "+joinCounts(r.BrokenByKind))
		lines = append(lines, "broken by last server: "+joinCounts(r.BrokenByServer))
		if len(r.FailedServers) > 0 {
			lines = append(lines, fmt.Sprintf("of which on servers stopped by fail-server %v (lost with them): %d", r.FailedServers, r.BrokenOnFailed))
		}
	}
	if len(r.BrokenConns) > 0 {
		// When and on which server: matched against the events, this says
		// which change broke them.
		var parts []string
		for _, b := range r.BrokenConns {
			parts = append(parts, fmt.Sprintf("%v %s@%s", time.Duration(b.At).Round(100*time.Millisecond), b.Kind, b.Server))
		}
		more := ""
		if r.Broken > len(r.BrokenConns) {
			more = fmt.Sprintf(" (first %d of %d)", len(r.BrokenConns), r.Broken)
		}
		lines = append(lines, "broken at (time kind@last server)"+more+": "+strings.Join(parts, ", "))
	}
	if r.IdleConnections > 0 {
		lines = append(lines, fmt.Sprintf("idle connections: %d of the %d", r.IdleConnections, r.Connections))
	}
	if f := r.Final; f != nil && (len(f.Down()) > 0 || len(f.Pending()) > 0 || f.Unowned > 0 || f.FailOpen) {
		lines = append(lines, fmt.Sprintf("at the end: servers marked down %v, pending %v, %d buckets without an owner, fail-open %v",
			f.Down(), f.Pending(), f.Unowned, f.FailOpen))
	}
	if r.Churn != nil {
		lines = append(lines, fmt.Sprintf("churn seed %d (replay with --seed %d)", r.Churn.Seed, r.Churn.Seed))
	}
	if len(r.SubflowsMissing) > 0 {
		lines = append(lines, "MPTCP connections closed without a secondary subflow: "+joinCounts(r.SubflowsMissing))
	}
	if len(r.ServerShare) > 0 {
		parts := []string{}
		for _, k := range sortedKeys(r.ServerShare) {
			if r.ServerShare[k] > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", k, 100*r.ServerShare[k]))
			}
		}
		lines = append(lines, "traffic share after the last change: "+strings.Join(parts, ", "))
	}
	if r.ChainedPackets > 0 {
		parts := []string{}
		for _, k := range sortedKeys(r.ChainedPerServer) {
			if r.ChainedPerServer[k] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", k, r.ChainedPerServer[k]))
			}
		}
		lines = append(lines, "daisy-chained packets: "+strings.Join(parts, ", "))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s/%s:\n", r.label(), r.Strategy)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

func joinCounts(m map[string]int) string {
	parts := []string{}
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// SummaryLine is the line `make demo` ends with, one per run.
func (r *Result) SummaryLine() string {
	return fmt.Sprintf("summary: strategy=%s connections=%d broken=%d", r.Strategy, r.Connections, r.Broken)
}
