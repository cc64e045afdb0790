package lab

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WritePlots draws PNGs like the paper's figures into dir and returns
// their paths: per experiment, one plot overlaying the strategies on the
// same axes (plot_compare.go); per run, throughput per server and in
// total, FCT median and p99 over time, daisy-chained packets per server;
// across runs, broken connections per experiment and strategy. Their look:
// plot_style.go.
func WritePlots(dir string, results []*Result) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		if err := savePlot(p, path); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, path)
		return nil
	}
	for _, group := range byExperiment(results) {
		if len(group) < 2 {
			continue
		}
		path := filepath.Join(dir, fileBase(group[0].label())+"-compare.png")
		if err := comparePlot(group, path); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	for _, r := range results {
		base := fmt.Sprintf("%s-%s", fileBase(r.label()), r.Strategy)
		for _, d := range []struct {
			suffix string
			draw   func(*Result) (*plot.Plot, error)
		}{{"servers", serverThroughputPlot}, {"total", totalThroughputPlot}, {"fct", fctPlot}, {"chained", chainedPlot}, {"mct", mctPlot}} {
			p, err := d.draw(r)
			if err != nil {
				return files, err
			}
			if p != nil {
				if err := save(p, base+"-"+d.suffix+".png"); err != nil {
					return files, err
				}
			}
		}
	}
	if len(results) > 0 {
		p, err := brokenPlot(results)
		if err != nil {
			return files, err
		}
		if err := save(p, "broken.png"); err != nil {
			return files, err
		}
	}
	return files, nil
}

// fileBase makes an experiment label a file name ("affinity (-1 srv)" →
// "affinity-1srv").
func fileBase(label string) string {
	return strings.NewReplacer(" ", "", "(", "", ")", "").Replace(label)
}

func timePlot(r *Result, title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s, %s", title, r.label(), r.Strategy)
	p.X.Label.Text = "time since the load started (s)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	return p
}

// markEvents draws r's events as labelled dashed lines up to top.
func markEvents(p *plot.Plot, r *Result, top float64) { eventLines(p, r.Events, top) }

func serverThroughputPlot(r *Result) (*plot.Plot, error) {
	p := timePlot(r, "Throughput per server", "Gb/s sent")
	series := map[string]plotter.XYs{}
	top := 0.0
	for _, s := range r.Timeline {
		for k, v := range s.ServerMbps {
			series[k] = append(series[k], plotter.XY{X: s.T, Y: v / 1000})
			top = max(top, v/1000)
		}
	}
	var args []any
	for _, k := range sortedKeys(series) {
		args = append(args, k, series[k])
	}
	if len(args) == 0 {
		return nil, nil
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return nil, err
	}
	markEvents(p, r, top)
	return p, nil
}

// totalThroughputPlot: what the clients receive. The mux count is not a
// second series on this axis (another unit): mux changes are events.
func totalThroughputPlot(r *Result) (*plot.Plot, error) {
	p := timePlot(r, "Total throughput", "Gb/s received by the clients")
	var gbps plotter.XYs
	top := 0.0
	for _, s := range r.Timeline {
		gbps = append(gbps, plotter.XY{X: s.T, Y: s.Gbps})
		top = max(top, s.Gbps)
	}
	if len(gbps) == 0 {
		return nil, nil
	}
	l, err := plotter.NewLine(gbps)
	if err != nil {
		return nil, err
	}
	l.Color = strategyColor(r.Strategy)
	l.Width = vg.Points(1.5)
	p.Add(l)
	markEvents(p, r, top)
	return p, nil
}

func fctPlot(r *Result) (*plot.Plot, error) {
	w := FCTOverTime(r.FCTs, 2*time.Second)
	if len(w) == 0 {
		return nil, nil
	}
	p := timePlot(r, "Flow completion time", "ms (per 2 s window)")
	var med, p99 plotter.XYs
	top := 0.0
	for _, x := range w {
		med = append(med, plotter.XY{X: x.T, Y: x.MedianMs})
		p99 = append(p99, plotter.XY{X: x.T, Y: x.P99Ms})
		top = max(top, x.P99Ms)
	}
	if err := plotutil.AddLinePoints(p, "median", med, "99th percentile", p99); err != nil {
		return nil, err
	}
	markEvents(p, r, top)
	return p, nil
}

func chainedPlot(r *Result) (*plot.Plot, error) {
	if r.ChainedPackets == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Daisy-chained packets per server — %s, %s", r.label(), r.Strategy)
	p.Y.Label.Text = "packets"
	names := sortedKeys(r.ChainedPerServer)
	var v plotter.Values
	for _, k := range names {
		v = append(v, float64(r.ChainedPerServer[k]))
	}
	bars, err := plotter.NewBarChart(v, vg.Points(20))
	if err != nil {
		return nil, err
	}
	bars.Color = strategyColor(r.Strategy)
	p.Add(bars)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4 // the outer bars whole
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks
	return p, nil
}

// brokenPlot: broken connections per experiment, one bar per strategy,
// each labelled with its count ("0 broken" where a bar has no height, so
// an empty axis never has to be read as zero).
func brokenPlot(results []*Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Broken connections per experiment and strategy"
	p.Y.Label.Text = "broken (% of connections)"
	var labels []string
	by := map[string]map[string]*Result{}
	var strategies []string
	top := 0.0
	for _, r := range results {
		l := r.label()
		if by[l] == nil {
			by[l] = map[string]*Result{}
			labels = append(labels, l)
		}
		by[l][r.Strategy] = r
		top = max(top, r.BrokenPct)
	}
	for _, s := range Strategies() {
		for _, r := range results {
			if r.Strategy == s {
				strategies = append(strategies, s)
				break
			}
		}
	}
	w := vg.Points(16)
	for i, strategy := range strategies {
		var v plotter.Values
		var counts plotter.XYLabels
		for j, l := range labels {
			r := by[l][strategy]
			pct := 0.0
			if r != nil {
				pct = r.BrokenPct
			}
			v = append(v, pct)
			if r != nil {
				counts.XYs = append(counts.XYs, plotter.XY{X: float64(j), Y: pct})
				counts.Labels = append(counts.Labels, fmt.Sprintf("%d broken", r.Broken))
			}
		}
		bars, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, err
		}
		bars.Color = strategyColor(strategy)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(strategies)-1)/2)
		p.Add(bars)
		p.Legend.Add(strategy, bars)
		if len(counts.XYs) == 0 {
			continue
		}
		// Each count above its bar, in the bar's colour, turned so that
		// neighbouring bars' counts do not run into each other.
		lb, err := plotter.NewLabels(counts)
		if err != nil {
			return nil, err
		}
		lb.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font.Size = vg.Points(9)
			lb.TextStyle[k].Rotation = 1.5708
			lb.TextStyle[k].XAlign = draw.XLeft
			lb.TextStyle[k].YAlign = draw.YCenter
			lb.TextStyle[k].Color = bars.Color
		}
		p.Add(lb)
	}
	p.Y.Min, p.Y.Max = 0, max(1, top*1.45)
	p.NominalX(labels...)
	return p, nil
}
