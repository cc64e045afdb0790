package lab

import (
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotAWFD writes NAME-throughput.svg and NAME-fct.svg into dir: each
// variant's mean with its standard error (Spotlight Fig. 12/13, or 14 for
// the loss run). SVG: text, so docs can carry it.
func PlotAWFD(r *AWFDResult, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var labels []string
	for _, s := range r.Summary {
		labels = append(labels, s.Variant.Name)
	}
	bars := func(title, ylabel, file string, val func(AWFDSummary) (float64, float64)) error {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		v := make(plotter.Values, len(r.Summary))
		e := make(plotter.YErrors, len(r.Summary))
		for i, s := range r.Summary {
			m, se := val(s)
			v[i], e[i] = m, struct{ Low, High float64 }{se, se}
		}
		b, err := plotter.NewBarChart(v, vg.Points(22))
		if err != nil {
			return err
		}
		b.Color = plotutil.Color(0)
		p.Add(b)
		pts := make(plotter.XYs, len(v))
		for i := range v {
			pts[i] = plotter.XY{X: float64(i), Y: v[i]}
		}
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, e})
		if err != nil {
			return err
		}
		p.Add(eb)
		p.NominalX(labels...)
		p.X.Tick.Label.Rotation = 0.6
		p.X.Tick.Label.XAlign = -0.9
		return p.Save(vg.Length(60+45*len(v))*vg.Points(1), 4.5*vg.Inch, filepath.Join(dir, name+"-"+file+".svg"))
	}
	if err := bars("Aggregate throughput (Mbit/s), mean ± s.e.", "Mbit/s", "throughput",
		func(s AWFDSummary) (float64, float64) { return s.Throughput, s.ThroughputErr }); err != nil {
		return err
	}
	return bars("Mean flow completion time (ms), mean ± s.e.", "ms", "fct",
		func(s AWFDSummary) (float64, float64) { return s.MeanFCT, s.MeanFCTErr })
}
