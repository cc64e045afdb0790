package dpbench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Figure is one method's figure for a row over the trials.
type Figure struct {
	NsMedian float64 `json:"ns_median"`
	NsMin    float64 `json:"ns_min"`
	NsMax    float64 `json:"ns_max"`
	NsNet    float64 `json:"ns_net"` // median minus the same method's empty program
	// Quickest trial minus the same method's empty program's quickest:
	// the program's own cost, without the time a shared machine's other
	// load adds to some trials.
	NsNetQuiet   float64 `json:"ns_net_quiet"`
	PathVerified bool    `json:"path_verified"`
}

// Row is one program's figures (the JSON contract of `beamer-lab bench
// dataplane`). The batched figure (repeat N, wall time / N) keeps its
// original field names; PerPacket is the per-packet method (one test run
// per packet of the production program, kernel-reported time); Baseline is
// the compare mode's baseline object measured on the same maps.
type Row struct {
	Name         string  `json:"name"`
	Flows        int     `json:"flows"`
	Buckets      int     `json:"buckets,omitempty"`
	NsPerPacket  float64 `json:"ns_per_packet"` // batched, median over trials
	NsMin        float64 `json:"ns_min"`
	NsMax        float64 `json:"ns_max"`
	NsNet        float64 `json:"ns_per_packet_net"`       // minus the empty program of the same run
	NsNetQuiet   float64 `json:"ns_per_packet_net_quiet"` // quickest trial minus the empty program's quickest
	MppsPerCore  float64 `json:"mpps_per_core"`
	PathVerified bool    `json:"path_verified"`
	Method       string  `json:"method"`
	PerPacket    *Figure `json:"per_packet,omitempty"`
	Baseline     *Figure `json:"baseline,omitempty"`
	// The compare mode's baseline production program, per packet, on
	// the same packets in alternation with PerPacket.
	BaselinePerPacket *Figure `json:"baseline_per_packet,omitempty"`
	// HitShare: of a maglev row's packets, the connection-table hits (the
	// rest are misses: flows whose bucket was full).
	HitShare float64 `json:"hit_share,omitempty"`
}

// Ratios between figures of the same run.
type Ratios struct {
	// Net of the empty program, at 1,000 buckets (issue 18: ≤ 2); the
	// quiet one of the quiet figures.
	BeamerOverEncapFloor      float64 `json:"beamer_over_encap_floor"`
	BeamerOverEncapFloorQuiet float64 `json:"beamer_over_encap_floor_quiet"`
	BeamerOverMaglev1M        float64 `json:"beamer_over_maglev_1m"`
	AgentLocalOverEmptyTC     float64 `json:"agent_local_over_empty_tc"`
	// The XDP fast path against the empty XDP program.
	AgentXDPLocalOverEmpty float64 `json:"agent_xdp_local_over_empty_xdp"`
	// The fast paths against the minimal program of the same hook that
	// only strips the outer header (issue 27: ≤ 2), per packet, net:
	// median and quiet.
	AgentLocalOverStripFloorTC       float64 `json:"agent_local_over_strip_floor_tc"`
	AgentLocalOverStripFloorTCQuiet  float64 `json:"agent_local_over_strip_floor_tc_quiet"`
	AgentXDPLocalOverStripFloor      float64 `json:"agent_xdp_local_over_strip_floor_xdp"`
	AgentXDPLocalOverStripFloorQuiet float64 `json:"agent_xdp_local_over_strip_floor_xdp_quiet"`
	// The Maglev strategy's connection table against the LRU hash it
	// replaced, at 1M flows in the same run (issue 27: ≤ 0.6), net:
	// batched median and quiet, per packet median and quiet.
	MaglevOverLRU1M               float64 `json:"maglev_over_lru_1m"`
	MaglevOverLRU1MQuiet          float64 `json:"maglev_over_lru_1m_quiet"`
	MaglevOverLRU1MPerPacket      float64 `json:"maglev_over_lru_1m_per_packet"`
	MaglevOverLRU1MPerPacketQuiet float64 `json:"maglev_over_lru_1m_per_packet_quiet"`
}

// Report is the whole result.
type Report struct {
	Programs  []Row     `json:"programs"`
	Ratios    Ratios    `json:"ratios"`
	Live      []LiveRow `json:"live,omitempty"`
	Repeat    int       `json:"repeat"`
	Trials    int       `json:"trials"`
	PerPacket int       `json:"per_packet_runs"` // per-packet runs per trial
	Baseline  string    `json:"baseline,omitempty"`
	// The baseline's maps this build does not have: the baseline got its
	// own, empty (a row that needed one filled shows unverified).
	BaselinePrivate []string `json:"baseline_private_maps,omitempty"`
	// The same for the agent's baseline (--compare-agent).
	AgentBaselinePrivate []string `json:"agent_baseline_private_maps,omitempty"`
	// AgentBaseline names the agent compare mode's baseline object.
	AgentBaseline string `json:"agent_baseline,omitempty"`
}

// takesPath says whether a row runs a program whose decision counters
// verify its path; the empty programs, the floors and the rotation do not
// decide anything.
func takesPath(name string) bool {
	return name != "empty" && name != "empty-tc" && name != "rotation" && !strings.HasSuffix(name, "floor") && !strings.Contains(name, "floor-") && !strings.HasPrefix(name, "lines-")
}

func (r *Report) find(name string, flows, buckets int) *Row {
	for i := range r.Programs {
		p := &r.Programs[i]
		if p.Name == name && (flows == 0 || p.Flows == flows) && (buckets == 0 || p.Buckets == buckets) {
			return p
		}
	}
	return nil
}

func spreadCell(med, lo, hi float64) string { return fmt.Sprintf("%.1f (%.1f–%.1f)", med, lo, hi) }

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "program\tflows\tbuckets\tbatched ns (min–max)\tnet\tquiet\tper-packet ns (min–max)\tnet\tquiet\tMpps/core\tpath verified\t"
	compare := r.Baseline != "" || r.AgentBaseline != ""
	if compare {
		head += "baseline ns (min–max)\tnet\tquiet\tbaseline verified\tbaseline per packet (min–max)\tnet\tquiet\tverified\t"
	}
	fmt.Fprintln(tw, head)
	for _, p := range r.Programs {
		b := "-"
		if p.Buckets > 0 {
			b = fmt.Sprint(p.Buckets)
		}
		pp, ppNet, ppQuiet := "-", "-", "-"
		ok := p.PathVerified
		if p.PerPacket != nil {
			pp, ppNet, ppQuiet = spreadCell(p.PerPacket.NsMedian, p.PerPacket.NsMin, p.PerPacket.NsMax), fmt.Sprintf("%.1f", p.PerPacket.NsNet), fmt.Sprintf("%.1f", p.PerPacket.NsNetQuiet)
			ok = ok && p.PerPacket.PathVerified
		}
		bt, bNet, bQuiet, mpps := "-", "-", "-", "-"
		if p.NsPerPacket > 0 { // per-packet-only rows (no undo) have no batched figure
			bt, bNet, bQuiet, mpps = spreadCell(p.NsPerPacket, p.NsMin, p.NsMax), fmt.Sprintf("%.1f", p.NsNet), fmt.Sprintf("%.1f", p.NsNetQuiet), fmt.Sprintf("%.2f", p.MppsPerCore)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t", p.Name, p.Flows, b, bt, bNet, bQuiet, pp, ppNet, ppQuiet, mpps, ok)
		if compare {
			for _, f := range []*Figure{p.Baseline, p.BaselinePerPacket} {
				if f != nil {
					fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%v\t", spreadCell(f.NsMedian, f.NsMin, f.NsMax), f.NsNet, f.NsNetQuiet, f.PathVerified)
				} else {
					fmt.Fprint(tw, "-\t-\t-\t-\t")
				}
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nbeamer / encap-floor, net, 1,000 buckets, batched: %.2f, quiet %.2f (issue 18: ≤ 2)   beamer / maglev at 1M flows: %.2f   agent local / empty tc: %.2f, in XDP / empty XDP: %.2f\n",
		r.Ratios.BeamerOverEncapFloor, r.Ratios.BeamerOverEncapFloorQuiet, r.Ratios.BeamerOverMaglev1M, r.Ratios.AgentLocalOverEmptyTC, r.Ratios.AgentXDPLocalOverEmpty)
	for _, t := range r.FloorTargets() {
		fmt.Fprintf(w, "%s: %s (baseline %s): %s\n", t.What, t.Now, t.Before, t.Verdict)
	}
	fmt.Fprintf(w, "agent fast path / strip floor of the same hook, per packet, net (issue 27: ≤ 2): tc %.2f, quiet %.2f; XDP %.2f, quiet %.2f\n",
		r.Ratios.AgentLocalOverStripFloorTC, r.Ratios.AgentLocalOverStripFloorTCQuiet, r.Ratios.AgentXDPLocalOverStripFloor, r.Ratios.AgentXDPLocalOverStripFloorQuiet)
	r.printAgentBaseline(w)
	if len(r.Live) > 0 {
		fmt.Fprintln(w)
		printLive(w, r.Live)
	}
	fmt.Fprintf(w, "method: batched = one BPF_PROG_TEST_RUN with %d repetitions of the benchmark build (it undoes its packet changes), kernel-reported time / N; "+
		"per-packet = %d test runs of the production program with repeat 1, kernel-reported time, mean of the runs not over ten times the trial's median; median (min–max) over %d trials, on CPU 0; flows in random order; "+
		"net = median of each trial minus the empty program of the same trial, quiet = quickest trial minus the empty program's quickest\n",
		r.Repeat, r.PerPacket, r.Trials)
	if r.Baseline != "" {
		fmt.Fprintf(w, "baseline: %s, its benchmark program run in alternation with the current one on the same maps\n", r.Baseline)
		if len(r.BaselinePrivate) > 0 {
			fmt.Fprintf(w, "baseline maps not in this build, the baseline's own and empty: %s\n", strings.Join(r.BaselinePrivate, ", "))
		}
	}
	if len(r.AgentBaselinePrivate) > 0 {
		fmt.Fprintf(w, "agent baseline maps not in this build, the baseline's own and empty: %s\n", strings.Join(r.AgentBaselinePrivate, ", "))
	}
}
