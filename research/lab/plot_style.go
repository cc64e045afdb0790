package lab

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The lab's plots share one look, checked by rendering them and looking:
// units in every axis label (Gb/s for throughput everywhere, ms, counts),
// events as dashed lines labelled with what happened, the legend in a
// margin of its own (never over data), the same colour for a strategy in
// every plot.

const (
	plotW, plotH = 7 * vg.Inch, 4 * vg.Inch
	legendW      = 1.25 * vg.Inch // the right margin holding the legend
)

// strategyColor is a strategy's colour in every plot.
func strategyColor(s string) color.Color {
	for i, name := range Strategies() {
		if name == s {
			return plotutil.Color(i)
		}
	}
	return color.Black
}

// eventLines draws each event of r as a dashed vertical line from 0 to top
// with its name at the top, staggered so neighbours do not overlap. The
// final "end" marker is left out: the axis ends there.
func eventLines(p *plot.Plot, events []EventLog, top float64) {
	var labels plotter.XYLabels
	n := 0
	for _, e := range events {
		if e.Event == "end" {
			continue
		}
		t := time.Duration(e.At).Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: t, Y: 0}, {X: t, Y: top}})
		if err != nil {
			continue
		}
		l.Color = color.Gray{Y: 120}
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		// Alternate two heights: events a second apart stay readable.
		y := top * (1.04 + 0.07*float64(n%2))
		labels.XYs = append(labels.XYs, plotter.XY{X: t, Y: y})
		labels.Labels = append(labels.Labels, shortEvent(e.Event))
		n++
	}
	if len(labels.XYs) == 0 {
		return
	}
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].XAlign = draw.XCenter
	}
	p.Add(lb)
	p.Y.Max = max(p.Y.Max, top*1.16) // room for the labels above the data
}

// shortEvent names an event in a few characters ("remove-server 3" →
// "−srv3").
func shortEvent(e string) string {
	r := strings.NewReplacer("remove-server ", "−srv", "add-server ", "+srv", "remove-mux ", "−mux", "add-mux ", "+mux",
		"fail-health ", "fail srv", "restore-health ", "ok srv", "set-weight ", "w ", "fail-server ", "kill srv", "syn-flood", "flood")
	return r.Replace(e)
}

// countTicks labels an axis of counts with whole numbers ("5000", not
// "5000.00").
var countTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
})

// savePlot writes p as a PNG with its legend (if any) in the right margin.
func savePlot(p *plot.Plot, path string) error {
	img := vgimg.New(plotW, plotH)
	dc := draw.New(img)
	if r := p.Legend.Rectangle(dc); r.Size().X > 0 {
		leg := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
		leg.Top, leg.Left = true, true
		leg.XOffs = vg.Points(6)
		leg.YOffs = -vg.Points(24)
		leg.Draw(draw.Crop(dc, plotW-legendW, 0, 0, 0))
		p.Legend = leg
	} else {
		p.Draw(dc)
	}
	return writePNG(img, path)
}

func writePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}
