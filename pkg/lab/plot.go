package lab

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlots draws PNGs like the paper's figures into dir and returns
// their paths: per run, throughput per server and in total (with the mux
// count), FCT median and p99 over time, daisy-chained packets per server;
// across runs, broken connections per experiment and strategy.
func WritePlots(dir string, results []*Result) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		if err := p.Save(7*vg.Inch, 4*vg.Inch, path); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, path)
		return nil
	}
	for _, r := range results {
		base := fmt.Sprintf("%s-%s", strings.NewReplacer(" ", "", "(", "", ")", "").Replace(r.label()), r.Strategy)
		for suffix, draw := range map[string]func(*Result) (*plot.Plot, error){
			"servers": serverThroughputPlot, "total": totalThroughputPlot, "fct": fctPlot, "chained": chainedPlot, "mct": mctPlot,
		} {
			p, err := draw(r)
			if err != nil {
				return files, err
			}
			if p != nil {
				if err := save(p, base+"-"+suffix+".png"); err != nil {
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

func timePlot(r *Result, title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s, %s", title, r.label(), r.Strategy)
	p.X.Label.Text = "time since the load started (s)"
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// markEvents draws each event as a thin vertical line.
func markEvents(p *plot.Plot, r *Result, top float64) {
	for _, e := range r.Events {
		t := time.Duration(e.At).Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: t, Y: 0}, {X: t, Y: top}})
		if err != nil {
			continue
		}
		l.Color = color.Gray{Y: 160}
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
	}
}

func serverThroughputPlot(r *Result) (*plot.Plot, error) {
	p := timePlot(r, "Throughput per server", "Mb/s sent")
	series := map[string]plotter.XYs{}
	top := 0.0
	for _, s := range r.Timeline {
		for k, v := range s.ServerMbps {
			series[k] = append(series[k], plotter.XY{X: s.T, Y: v})
			top = max(top, v)
		}
	}
	var args []any
	for _, k := range sortedKeys(series) {
		args = append(args, k, series[k])
	}
	if len(args) == 0 {
		return nil, nil
	}
	markEvents(p, r, top)
	return p, plotutil.AddLines(p, args...)
}

func totalThroughputPlot(r *Result) (*plot.Plot, error) {
	p := timePlot(r, "Total throughput", "Gb/s received by clients; muxes in the route")
	var gbps, muxes plotter.XYs
	top := 0.0
	for _, s := range r.Timeline {
		gbps = append(gbps, plotter.XY{X: s.T, Y: s.Gbps})
		muxes = append(muxes, plotter.XY{X: s.T, Y: float64(s.Muxes)})
		top = max(top, s.Gbps, float64(s.Muxes))
	}
	if len(gbps) == 0 {
		return nil, nil
	}
	markEvents(p, r, top)
	return p, plotutil.AddLines(p, "Gb/s", gbps, "muxes", muxes)
}

func fctPlot(r *Result) (*plot.Plot, error) {
	w := FCTOverTime(r.FCTs, 2*time.Second)
	if len(w) == 0 {
		return nil, nil
	}
	p := timePlot(r, "Flow completion time", "ms")
	var med, p99 plotter.XYs
	top := 0.0
	for _, x := range w {
		med = append(med, plotter.XY{X: x.T, Y: x.MedianMs})
		p99 = append(p99, plotter.XY{X: x.T, Y: x.P99Ms})
		top = max(top, x.P99Ms)
	}
	markEvents(p, r, top)
	return p, plotutil.AddLinePoints(p, "median", med, "99th percentile", p99)
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
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	p.NominalX(names...)
	return p, nil
}

// brokenPlot: broken connections (%) per run, one bar per strategy.
func brokenPlot(results []*Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Broken connections per strategy"
	p.Y.Label.Text = "broken (% of connections)"
	var labels []string
	by := map[string]map[string]float64{}
	for _, r := range results {
		l := r.label()
		if by[l] == nil {
			by[l] = map[string]float64{}
			labels = append(labels, l)
		}
		by[l][r.Strategy] = r.BrokenPct
	}
	w := vg.Points(14)
	for i, strategy := range Strategies() {
		var v plotter.Values
		for _, l := range labels {
			v = append(v, by[l][strategy])
		}
		bars, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(float64(i)-0.5)
		p.Add(bars)
		p.Legend.Add(strategy, bars)
	}
	p.Legend.Top = true
	p.NominalX(labels...)
	return p, nil
}
