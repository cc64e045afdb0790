package lab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// mctFamily is the mux gauge of the Prism MCT's entries (pkg/strategy/prism/daemon.go).
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
	if _, ok := strategies[r.Strategy].(mctKeeper); !ok {
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

// muxAPIAddr is the mux daemons' --metrics address: all addresses (an
// older binary serves the Prism keep-alive bits there, which the
// controller collects across the fabric; the lab scrapes 127.0.0.1).
const muxAPIAddr = "0.0.0.0:9100"

// The lab's controller collects the keep-alive bits every second and
// suspects an MCT entry after 3 rounds without a hit.
func prismControllerArgs(file string) []string {
	return []string{"--prism-muxes-file", file, "--prism-keepalive-every", "1s", "--prism-idle-rounds", "3"}
}

func (l *Lab) prismMuxFile() string { return filepath.Join(l.opts.Dir, "prism-muxes") }

// writePrismMuxes lists the running muxes for the controller, as an
// operator's configuration management would on every mux change (a mux
// left out would make its connections look idle; a listed mux that does
// not answer stops pruning from the bits until it answers again).
func (l *Lab) writePrismMuxes() error {
	if !l.prismKeepAlive {
		return nil
	}
	var b strings.Builder
	b.WriteString("# muxes the controller collects Prism keep-alive bits from (the lab rewrites it on every mux change)\n")
	for _, a := range l.runningMuxes() {
		fmt.Fprintf(&b, "%s\n", netip.AddrPortFrom(a, l.muxKeepAlivePort()))
	}
	for _, a := range l.prismExtraMuxes {
		fmt.Fprintf(&b, "%s\n", a)
	}
	tmp := l.prismMuxFile() + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.prismMuxFile())
}
