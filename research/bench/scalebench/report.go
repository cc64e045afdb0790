package scalebench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Summary is a Result reduced to the figures of the table.
type Summary struct {
	AddAll, AddAllP99, AddFirst      time.Duration
	RemoveAll, RemoveAllP99          time.Duration
	AddBytes, RemoveBytes            int64
	AddCPU, RemoveCPU                time.Duration
	AddMuxCPU, RemoveMuxCPU          time.Duration
	ColdMedian, ColdP99, FreshMedian time.Duration
}

// Summarize computes medians and p99s over the single operations.
func (r *Result) Summarize() Summary {
	var s Summary
	var add, rem, addFirst, addCPU, remCPU, addMux, remMux []time.Duration
	var addB, remB []time.Duration // bytes, sorted like durations
	for _, op := range r.Single {
		if op.Kind == "add-dip" {
			add, addFirst, addCPU = append(add, op.All), append(addFirst, op.First), append(addCPU, op.ControllerCPU)
			addMux = append(addMux, op.MuxCPU)
			addB = append(addB, time.Duration(op.BytesPerMux))
		} else {
			rem, remCPU = append(rem, op.All), append(remCPU, op.ControllerCPU)
			remMux = append(remMux, op.MuxCPU)
			remB = append(remB, time.Duration(op.BytesPerMux))
		}
	}
	a, rm := sortedDurations(add), sortedDurations(rem)
	s.AddAll, s.AddAllP99, s.AddFirst = percentile(a, 50), percentile(a, 99), percentile(sortedDurations(addFirst), 50)
	s.RemoveAll, s.RemoveAllP99 = percentile(rm, 50), percentile(rm, 99)
	s.AddBytes, s.RemoveBytes = int64(percentile(sortedDurations(addB), 50)), int64(percentile(sortedDurations(remB), 50))
	s.AddCPU, s.RemoveCPU = percentile(sortedDurations(addCPU), 50), percentile(sortedDurations(remCPU), 50)
	s.AddMuxCPU, s.RemoveMuxCPU = percentile(sortedDurations(addMux), 50), percentile(sortedDurations(remMux), 50)
	c := sortedDurations(r.ColdStart)
	s.ColdMedian, s.ColdP99 = percentile(c, 50), percentile(c, 99)
	s.FreshMedian = percentile(sortedDurations(r.FreshStart), 50)
	return s
}

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func size(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.0f MB", float64(n)/(1<<20))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// PrintMarkdown writes one table: the paper's figures (§6) beside every
// run's. The paper text gives the scale and the traffic of the 32K-DIP
// operations; its per-operation times are in a figure the text copy does
// not carry, so that column says so rather than guess.
func PrintMarkdown(w io.Writer, runs []*Result) {
	head := "| | paper (§6: ZooKeeper on 3 VMs, 100 mux VMs, EC2) |"
	sep := "|---|---|"
	for _, r := range runs {
		head += fmt.Sprintf(" %s, this machine |", r.Store)
		sep += "---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	row := func(name, paper string, f func(r *Result, s Summary) string) {
		line := "| " + name + " | " + paper + " |"
		for _, r := range runs {
			line += " " + f(r, r.Summarize()) + " |"
		}
		fmt.Fprintln(w, line)
	}
	row("DIPs / buckets / muxes", "64K / 6.4M / 100", func(r *Result, _ Summary) string {
		return fmt.Sprintf("%s / %s / %d", thousands(r.DIPs), thousands(r.Buckets), r.Followers)
	})
	row(fmt.Sprintf("add-dip → all muxes applied, median / p99 (%d ops)", countKind(runs, "add-dip")), "in a figure not in the text copy",
		func(_ *Result, s Summary) string { return ms(s.AddAll) + " / " + ms(s.AddAllP99) })
	row("add-dip → first mux applied, median", "", func(_ *Result, s Summary) string { return ms(s.AddFirst) })
	row(fmt.Sprintf("remove-dip → all muxes applied, median / p99 (%d ops)", countKind(runs, "remove-dip")), "in a figure not in the text copy",
		func(_ *Result, s Summary) string { return ms(s.RemoveAll) + " / " + ms(s.RemoveAllP99) })
	row("bytes read per mux per add-dip / remove-dip (median)", "\"negligible\"", func(_ *Result, s Summary) string {
		return size(s.AddBytes) + " / " + size(s.RemoveBytes)
	})
	row("controller CPU per add-dip / remove-dip (median)", "", func(_ *Result, s Summary) string {
		return ms(s.AddCPU) + " / " + ms(s.RemoveCPU)
	})
	row("CPU of one mux per add-dip / remove-dip (median)", "", func(_ *Result, s Summary) string {
		return ms(s.AddMuxCPU) + " / " + ms(s.RemoveMuxCPU)
	})
	row("DIPs added at once → all muxes applied", "", func(r *Result, _ Summary) string {
		return fmt.Sprintf("%s DIPs: %s", thousands(r.BatchAdd.DIPs), ms(r.BatchAdd.All))
	})
	row("bytes read per mux, DIPs added at once", "< 10 MB (32K DIPs; < 1 GB for 100 muxes)", func(r *Result, _ Summary) string { return size(r.BatchAdd.BytesPerMux) })
	row("DIPs removed at once → all muxes applied", "", func(r *Result, _ Summary) string {
		return fmt.Sprintf("%s DIPs: %s", thousands(r.BatchRemove.DIPs), ms(r.BatchRemove.All))
	})
	row("bytes read per mux, DIPs removed at once", "< 10 MB (32K DIPs)", func(r *Result, _ Summary) string { return size(r.BatchRemove.BytesPerMux) })
	row("controller CPU, add / remove at once", "", func(r *Result, _ Summary) string {
		return ms(r.BatchAdd.ControllerCPU) + " / " + ms(r.BatchRemove.ControllerCPU)
	})
	row("CPU of one mux, add / remove at once", "", func(r *Result, _ Summary) string {
		return ms(r.BatchAdd.MuxCPU) + " / " + ms(r.BatchRemove.MuxCPU)
	})
	row("mux cold start (blob + deltas, verified, plane filled), median / p99", "", func(_ *Result, s Summary) string {
		return ms(s.ColdMedian) + " / " + ms(s.ColdP99)
	})
	row("mux cold start alone at the end, median; bytes read", "", func(r *Result, s Summary) string {
		return ms(s.FreshMedian) + "; " + size(r.FreshBytes)
	})
	row("controller memory: resident at the end / peak", "", func(r *Result, _ Summary) string {
		return size(r.ControllerRSS) + " / " + size(r.ControllerPeak)
	})
	row("controller CPU while idle (over 12 s: one ring verification)", "", func(r *Result, _ Summary) string {
		return fmt.Sprintf("%.0f%% of a core", 100*r.ControllerIdleCPU)
	})
	row("store server resident memory", "", func(r *Result, _ Summary) string { return size(r.StoreRSS) })
	if runs[0].XDPMuxes > 0 {
		row("real XDP muxes (pkg/node/muxd on a veth) following beside them", "", func(r *Result, _ Summary) string { return fmt.Sprint(r.XDPMuxes) })
		row("add-dip / remove-dip → all XDP muxes applied, median", "", func(r *Result, _ Summary) string {
			return ms(medianOf(r.Single, "add-dip")) + " / " + ms(medianOf(r.Single, "remove-dip"))
		})
		row("DIPs added / removed at once → all XDP muxes applied", "", func(r *Result, _ Summary) string {
			return ms(r.BatchAdd.XDPAll) + " / " + ms(r.BatchRemove.XDPAll)
		})
		row("XDP mux cold start (store → verified table → BPF maps), median; bytes read", "", func(r *Result, _ Summary) string {
			return ms(percentile(sortedDurations(r.XDPCold), 50)) + "; " + size(r.XDPColdBytes)
		})
	}
	row("machine load average during the run (2 cores)", "", func(r *Result, _ Summary) string {
		return fmt.Sprintf("%.0f–%.0f", r.LoadMin, r.LoadMax)
	})
	row("every mux ended with the store's table", "", func(r *Result, _ Summary) string {
		return fmt.Sprintf("yes (%d muxes at %v, %d follower errors)", r.Followers, r.Final, r.FollowerErrors)
	})
}

func countKind(runs []*Result, kind string) int {
	if len(runs) == 0 {
		return 0
	}
	n := 0
	for _, op := range runs[0].Single {
		if op.Kind == kind {
			n++
		}
	}
	return n
}

// medianOf is the median time until every XDP mux applied, over the
// single operations of one kind.
func medianOf(ops []Op, kind string) time.Duration {
	var ds []time.Duration
	for _, op := range ops {
		if op.Kind == kind {
			ds = append(ds, op.XDPAll)
		}
	}
	return percentile(sortedDurations(ds), 50)
}
