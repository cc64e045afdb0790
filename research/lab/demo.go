package lab

import (
	"context"
	"fmt"
	"io"
	"os"
)

// DemoOptions shape the demo: the built-in scenario "demo" at demo size.
type DemoOptions struct {
	Strategies []string
	Out        string // directory for plots and results.json
	Beamer     string
	Params     func(*Params) // adjusts the demo's parameters (flags)
	Stretch    float64       // multiplies the schedule's times (0 or 1: as is)
}

// RunDemo runs the demo scenario (a rolling removal of three servers, one
// request each, then a mux, while persistent HTTP connections download
// through two muxes behind a BGP router) once per strategy, prints the
// table and writes the plots.
func RunDemo(ctx context.Context, o DemoOptions, out io.Writer) ([]*Result, error) {
	var results []*Result
	for _, s := range o.Strategies {
		p, err := DefaultParams("affinity", SizeDemo, s)
		if err != nil {
			return nil, err
		}
		p.Experiment = ""
		if o.Params != nil {
			o.Params(&p)
		}
		sc, err := LoadScenario("demo")
		if err != nil {
			return nil, err
		}
		sc.Stretch(o.Stretch)
		fmt.Fprintf(out, "\n== demo, strategy %s: %s\n", s, ScenarioTitle("demo"))
		r, err := Run(ctx, RunOptions{Params: p, Scenario: sc, Beamer: o.Beamer, Progress: out})
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	fmt.Fprintln(out)
	WriteTable(out, results)
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return results, err
		}
		files, err := WritePlots(o.Out, results)
		if err != nil {
			return results, err
		}
		if err := WriteJSON(o.Out, results); err != nil {
			return results, err
		}
		fmt.Fprintf(out, "\nplots and results.json in %s/ (%d files)\n", o.Out, len(files)+1)
	}
	return results, nil
}
