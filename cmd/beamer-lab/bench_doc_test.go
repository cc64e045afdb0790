package main

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/bench/dpbench"
)

// TestPerfDocTemplate renders scripts/perf-doc.md.tmpl with a report that
// has every row and live row the prose names: the template must use only
// what a run produces, and every section must be there.
func TestPerfDocTemplate(t *testing.T) {
	fig := func(ns float64) *dpbench.Figure {
		return &dpbench.Figure{NsMedian: ns, NsMin: ns - 1, NsMax: ns + 1, NsNet: ns - 40, NsNetQuiet: ns - 45, PathVerified: true}
	}
	row := func(name string, flows, buckets int, ns float64) dpbench.Row {
		return dpbench.Row{Name: name, Flows: flows, Buckets: buckets, NsPerPacket: ns, NsMin: ns, NsMax: ns, NsNet: ns - 7, NsNetQuiet: ns - 9,
			MppsPerCore: 1e3 / ns, PathVerified: true, PerPacket: fig(ns + 40)}
	}
	rep := &dpbench.Report{Repeat: 1_000_000, Trials: 5, PerPacket: 100_000, Programs: []dpbench.Row{
		row("empty", 1, 0, 7), row("floor", 1, 0, 9), row("encap-floor", 1, 0, 30), row("rotation", 1_000_000, 0, 12), row("beamer", 1_000_000, 1000, 70), row("beamer-fib", 1_000_000, 1000, 75),
		row("beamer", 1_000_000, 1_000_000, 120), row("beamer-scattered", 1_000_000, 1_000_000, 200), row("maglev", 1_000_000, 65537, 300), row("empty-tc", 1, 0, 16),
		row("decap-floor", 1, 0, 100), row("agent-local", 1, 0, 150), row("decap-floor-xdp", 1, 0, 40), row("agent-xdp-local", 1, 0, 80),
		row("encap-floor-plain", 1, 0, 20), row("beamer-moved4", 1_000_000, 1000, 90), row("beamer-floor-moved4", 1_000_000, 1000, 50),
		row("strip-floor-tc", 1, 0, 60), row("strip-floor-xdp", 1, 0, 20), row("strip-floor-xdp-insns", 1, 0, 70), row("strip-floor-xdp-data", 1, 0, 22),
	}, Live: []dpbench.LiveRow{
		{Strategy: "beamer", Buckets: 1000, Flows: 1_000_000, Sent: 4_000_000, Forwarded: 4_000_000, Softirq: true},
		{Strategy: "beamer", Buckets: 1000, Flows: 1_000_000, Sent: 4_000_000, Forwarded: 3_500_000, DropsToMux: 500_000,
			DropsToSink: 1000, Delivered: 3_499_000, MuxNs: 400, GenNs: 150, SinkNs: 300, MuxBusy: 0.3, MuxCPU: 1},
		{Strategy: "encap-floor", Flows: 1_000_000, Sent: 4_000_000, Forwarded: 3_900_000, Delivered: 3_900_000, MuxNs: 200, MuxCPU: 1, TX: true},
		{Strategy: "beamer", Buckets: 1000, Flows: 1_000_000, Sent: 4_000_000, Forwarded: 3_900_000, Delivered: 3_900_000, MuxNs: 300, MuxCPU: 1, TX: true},
	}}
	d := perfDoc{Machine: dpbench.DescribeMachine(), Report: rep, Command: "scripts/perf-doc.sh", ControlPlane: "| control | plane |\n",
		ControlPlaneCommand: "beamer-lab bench control-plane"}
	out, err := renderPerfDoc("../../scripts/perf-doc.md.tmpl", &d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## The machine", "## Method", "## The mux", "### Targets", "## The agent", "## Live traffic",
		"## Control plane", "| control | plane |", "500,000 of 4,000,000", "Beamer ≤ 60 ns net at 1,000 buckets",
		"costs\n50 / 50 ns net more than at 1K", "reads the summary and then the entry: 130 / 130 ns more", "| 80 / 80 | 80 / 80 |",
		"for `strip-floor-tc`", "for `strip-floor-xdp`", "XDP_TX to the generator's end", "costs\n50 ns more than the floor (0.25 ns a\ncycle", "writes, 2 ns more.", "the Beamer mux at 1,000 buckets\n300 ns (3.33 Mpps a core): 1.50 × the floor", "(`beamer-fib` − `beamer`, 1K) | 5 / 5 | 5 / 5 |",
		"| a bucket with 4 previous owners ≤ 3 × the plain floor | – | 4.5 × / 5.7 × | not met; the least a Beamer mux does for such a bucket", "(`beamer-floor-moved4`): 2.5 × / 3.0 × |"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in the document", want)
		}
	}
}
