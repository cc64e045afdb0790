package lab

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// mctFamily is the mux gauge of the Prism MCT's entries (pkg/muxd/prism.go).
const mctFamily = "beamer_mux_prism_mct_entries"

// MCTEntries reads the Prism MCT size from the first running mux (every mux
// holds the same MCT: it is the ring's); ok is false when no mux answers
// or the instance is not a Prism one.
func (l *Lab) MCTEntries() (int, bool) {
	for _, m := range l.muxes {
		if !m.running || m.proc == nil || m.proc.exited() != nil {
			continue
		}
		v, err := scrapeCounters(m.ns, mctFamily)
		if err != nil {
			continue
		}
		n, ok := v[Instance]
		return int(n), ok
	}
	return 0, false
}

// mctPlot draws the Prism MCT's size over a run (nil for other strategies).
func mctPlot(r *Result) (*plot.Plot, error) {
	if r.Strategy != "prism" {
		return nil, nil
	}
	p := timePlot(r, "Prism MCT entries", "entries in the migrated-connection table")
	var xy plotter.XYs
	top := 0.0
	for _, s := range r.Timeline {
		xy = append(xy, plotter.XY{X: s.T, Y: float64(s.MCT)})
		top = max(top, float64(s.MCT))
	}
	if len(xy) == 0 {
		return nil, nil
	}
	markEvents(p, r, max(top, 1))
	return p, plotutil.AddLines(p, "MCT entries", xy)
}
