package lab

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// byExperiment groups runs by experiment (their label), in first-seen
// order, each group in the order of Strategies().
func byExperiment(results []*Result) [][]*Result {
	var order []string
	groups := map[string][]*Result{}
	for _, r := range results {
		l := r.label()
		if groups[l] == nil {
			order = append(order, l)
		}
		groups[l] = append(groups[l], r)
	}
	var out [][]*Result
	for _, l := range order {
		var g []*Result
		for _, s := range Strategies() {
			for _, r := range groups[l] {
				if r.Strategy == s {
					g = append(g, r)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// comparePlot overlays the strategies of one experiment on the same axes:
// above, the throughput the clients receive; below, the connections broken
// so far. Same schedule, same time axis; the events (the first run's) as
// labelled lines on both; one legend in the right margin.
func comparePlot(runs []*Result, path string) error {
	label := runs[0].label()
	tput, broken := plot.New(), plot.New()
	tput.Title.Text = fmt.Sprintf("%s — strategies compared", label)
	tput.Y.Label.Text = "Gb/s received by the clients"
	broken.Y.Label.Text = "connections broken so far"
	broken.X.Label.Text = "time since the load started (s)"
	tput.Y.Min, broken.Y.Min = 0, 0
	leg := plot.NewLegend()
	topT, topB, end := 0.0, 0.0, 0.0
	for _, r := range runs {
		var t, b plotter.XYs
		for _, s := range r.Timeline {
			t = append(t, plotter.XY{X: s.T, Y: s.Gbps})
			b = append(b, plotter.XY{X: s.T, Y: float64(s.Broken)})
			topT, topB, end = max(topT, s.Gbps), max(topB, float64(s.Broken)), max(end, s.T)
		}
		if len(t) == 0 {
			continue
		}
		for _, d := range []struct {
			p  *plot.Plot
			xy plotter.XYs
		}{{tput, t}, {broken, b}} {
			l, err := plotter.NewLine(d.xy)
			if err != nil {
				return err
			}
			l.Color = strategyColor(r.Strategy)
			l.Width = vg.Points(1.5)
			d.p.Add(l)
			if d.p == tput {
				leg.Add(fmt.Sprintf("%s (%d broken)", r.Strategy, r.Broken), l)
			}
		}
	}
	// A flat zero line says "none broken" only if the axis shows a count.
	topB = max(topB, 1)
	eventLines(tput, runs[0].Events, topT)
	eventLines(broken, runs[0].Events, topB)
	for _, p := range []*plot.Plot{tput, broken} {
		p.X.Min, p.X.Max = 0, end
	}

	broken.Y.Tick.Marker = countTicks
	const w, legW = plotW + vg.Inch, 2 * vg.Inch
	img := vgimg.New(w, plotH*1.5)
	dc := draw.New(img)
	area := draw.Crop(dc, 0, -legW, 0, 0)
	plots := [][]*plot.Plot{{tput}, {broken}}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadY: vg.Points(6)}
	canvases := plot.Align(plots, tiles, area)
	tput.Draw(canvases[0][0])
	broken.Draw(canvases[1][0])
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = vg.Points(6), -vg.Points(24)
	leg.Draw(draw.Crop(dc, w-legW, 0, 0, 0))
	return writePNG(img, path)
}
