package dpbench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Row is one program's figure (the JSON contract of `beamer bench dataplane`).
type Row struct {
	Name         string  `json:"name"`
	Flows        int     `json:"flows"`
	Buckets      int     `json:"buckets,omitempty"`
	NsPerPacket  float64 `json:"ns_per_packet"`
	NsNet        float64 `json:"ns_per_packet_net"` // minus the empty program of the same run
	MppsPerCore  float64 `json:"mpps_per_core"`
	PathVerified bool    `json:"path_verified"`
	Method       string  `json:"method"`
}

// Ratios between figures of the same run.
type Ratios struct {
	BeamerOverFloor       float64 `json:"beamer_over_floor"`
	BeamerOverMaglev1M    float64 `json:"beamer_over_maglev_1m"`
	AgentLocalOverEmptyTC float64 `json:"agent_local_over_empty_tc"`
}

// Report is the whole result.
type Report struct {
	Programs []Row     `json:"programs"`
	Ratios   Ratios    `json:"ratios"`
	Live     []LiveRow `json:"live,omitempty"`
	Repeat   int       `json:"repeat"`
	Trials   int       `json:"trials"`
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

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "program\tflows\tbuckets\tns/packet\tnet ns\tMpps/core\tpath verified\t")
	for _, p := range r.Programs {
		b := "-"
		if p.Buckets > 0 {
			b = fmt.Sprint(p.Buckets)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.2f\t%v\t\n", p.Name, p.Flows, b, p.NsPerPacket, p.NsNet, p.MppsPerCore, p.PathVerified)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nbeamer / floor: %.2f (target ≤ 2)   beamer / maglev at 1M flows: %.2f (target ≤ 0.5)   agent local / empty tc: %.2f (target ≤ 1.3)\n",
		r.Ratios.BeamerOverFloor, r.Ratios.BeamerOverMaglev1M, r.Ratios.AgentLocalOverEmptyTC)
	if len(r.Live) > 0 {
		fmt.Fprintln(w, "\nlive traffic through a mux on veth (generator: XDP live frames, minimum-size packets):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "strategy\tbuckets\tflows\tsent\tforwarded\tMpps\tns/packet (bpf stats)\t")
		for _, l := range r.Live {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t\n", l.Strategy, l.Buckets, l.Flows, l.Sent, l.Forwarded, l.ForwardedMpps, l.ProgramNs)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "method: BPF_PROG_TEST_RUN, %d repetitions per trial, median of %d trials, on CPU 0; the benchmark builds undo their packet changes each repetition\n", r.Repeat, r.Trials)
}
