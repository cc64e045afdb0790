package awfdsim

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot writes awfd-fig8.svg (Ω vs update interval, log x) and
// awfd-fig10.svg (Ω vs m) into dir. SVG: text, so docs can carry it.
func Plot(r *Result, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "Service utilisation vs update interval (Spotlight Fig. 8)"
	p.X.Label.Text = "update interval (ms, log)"
	p.Y.Label.Text = "Ω"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var lines []any
	for _, s := range r.Fig8 {
		xys := make(plotter.XYs, len(s.Points))
		for i, pt := range s.Points {
			xys[i] = plotter.XY{X: pt.X, Y: pt.Omega}
		}
		lines = append(lines, s.Name, xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	p.Legend.Top = false
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, "awfd-fig8.svg")); err != nil {
		return err
	}
	q := plot.New()
	q.Title.Text = fmt.Sprintf("AWFD: Ω vs m at %v (Spotlight Fig. 10; m=∞ drawn at 20)", r.Config.FigInterval)
	q.X.Label.Text = "m (classes)"
	q.Y.Label.Text = "Ω"
	xys := make(plotter.XYs, len(r.Fig10.Points))
	for i, pt := range r.Fig10.Points {
		x := pt.X
		if x == 0 {
			x = 20
		}
		xys[i] = plotter.XY{X: x, Y: pt.Omega}
	}
	if err := plotutil.AddLinePoints(q, "AWFD", xys); err != nil {
		return err
	}
	return q.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "awfd-fig10.svg"))
}
