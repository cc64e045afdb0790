package main

import (
	"fmt"
	"path/filepath"

	"github.com/beamer-lb/beamer/research/sim/hashsim"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writePlots draws the figures of the report as PNGs in dir.
func writePlots(r *hashsim.Report, dir string) error {
	for name, draw := range map[string]func(*hashsim.Report) (*plot.Plot, error){
		"maglev_balance.png":    balancePlot,
		"maglev_resilience.png": resiliencePlot,
		"defrag_run.png":        defragPlot,
	} {
		p, err := draw(r)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		if err := p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
	}
	return nil
}

// balancePlot: over-provisioning per algorithm, one bar group per table
// size, ours and (where given) the paper's.
func balancePlot(r *hashsim.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Over-provisioning, %d backends", r.Config.Backends)
	p.Y.Label.Text = "max/avg − 1 (%)"
	var algs []string
	ours := map[uint32]plotter.Values{}
	paper := map[uint32]plotter.Values{}
	for _, x := range r.MaglevBalance {
		if x.TableSize == r.Config.BalanceSizes[0] {
			algs = append(algs, x.Algorithm)
		}
		ours[x.TableSize] = append(ours[x.TableSize], x.OverprovisionPct)
		v := 0.0
		if x.PaperOverprovisionPct != nil {
			v = *x.PaperOverprovisionPct
		}
		paper[x.TableSize] = append(paper[x.TableSize], v)
	}
	w := vg.Points(10)
	i := 0
	for _, size := range r.Config.BalanceSizes {
		for _, set := range []struct {
			label string
			v     plotter.Values
		}{{fmt.Sprintf("ours %d", size), ours[size]}, {fmt.Sprintf("paper %d", size), paper[size]}} {
			bars, err := plotter.NewBarChart(set.v, w)
			if err != nil {
				return nil, err
			}
			bars.Color = plotutil.Color(i)
			bars.Offset = w * vg.Length(float64(i)-1.5)
			p.Add(bars)
			p.Legend.Add(set.label, bars)
			i++
		}
	}
	p.Legend.Top = true
	p.NominalX(algs...)
	return p, nil
}

func resiliencePlot(r *hashsim.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Maglev: entries changed by concurrent failures (%d backends)", r.Config.Backends)
	p.X.Label.Text = "failed backends (%)"
	p.Y.Label.Text = "changed entries (%)"
	var args []any
	for _, size := range r.Config.BalanceSizes {
		var pts plotter.XYs
		for _, x := range r.MaglevResilience {
			if x.TableSize == size {
				pts = append(pts, plotter.XY{X: x.FailurePct, Y: x.ChangedPct})
			}
		}
		args = append(args, fmt.Sprintf("table %d", size), pts)
	}
	var min plotter.XYs
	for _, x := range r.MaglevResilience {
		if x.TableSize == r.Config.BalanceSizes[0] {
			min = append(min, plotter.XY{X: x.FailurePct, Y: x.MinimumPct})
		}
	}
	args = append(args, "failed backends' own entries", min)
	return p, plotutil.AddLinePoints(p, args...)
}

func defragPlot(r *hashsim.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Defragmentation from the worst case (%d DIPs, bmax %d)", r.Config.FragDIPs, r.Config.Defrag.MaxMoves)
	p.X.Label.Text = "buckets moved (cumulative)"
	p.Y.Label.Text = "range rules per DIP"
	var pts plotter.XYs
	for _, x := range r.DefragRun {
		pts = append(pts, plotter.XY{X: float64(x.CumulativeMoved), Y: x.RulesPerDIP})
	}
	return p, plotutil.AddLinePoints(p, "rules per DIP", pts)
}
