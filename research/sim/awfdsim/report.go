package awfdsim

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Point is Ω of one scheme at one x (interval in ms, or m), mean and
// standard error over the seeds.
type Point struct {
	X      float64 `json:"x"`
	Omega  float64 `json:"omega"`
	StdErr float64 `json:"stderr"`
}

// Series is one curve.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// Result is the simulation's output.
type Result struct {
	Config Config   `json:"config"`
	Fig8   []Series `json:"fig8"`  // Ω vs update interval (ms)
	Fig10  Series   `json:"fig10"` // AWFD Ω vs m at FigInterval (x = 0: m = ∞)
}

func stat(xs []float64) Point {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	se := 0.0
	if len(xs) > 1 {
		se = math.Sqrt(v/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
	}
	return Point{Omega: m, StdErr: se}
}

// Run runs every scheme of both figures over every seed.
func Run(c Config) (*Result, error) {
	if c.Flows < 2 || c.VIPs < 1 || c.DIPsPerVIP < 1 || len(c.Seeds) == 0 {
		return nil, fmt.Errorf("awfd sim: bad configuration %+v", c)
	}
	caps := capacities(c)
	traces := make([][]flow, len(c.Seeds))
	for i, s := range c.Seeds {
		traces[i] = trace(c, s)
	}
	omega := func(s scheme) Point {
		var xs []float64
		for i, seed := range c.Seeds {
			xs = append(xs, run(c, traces[i], caps, s, seed))
		}
		return stat(xs)
	}
	n := c.DIPsPerVIP
	fixed := []scheme{
		{name: "ECMP", make: func([]float64) dispatcher { return &ecmp{n: n} }},
		{name: "WCMP", make: func(cp []float64) dispatcher { return &wcmp{newWeighted(cp)} }},
		{name: "heuristic optimum", make: func([]float64) dispatcher { return optimum{} }},
	}
	r := &Result{Config: c}
	for _, s := range fixed {
		p := omega(s)
		ser := Series{Name: s.name}
		for _, iv := range c.Intervals {
			q := p
			q.X = ms(iv)
			ser.Points = append(ser.Points, q)
		}
		r.Fig8 = append(r.Fig8, ser)
	}
	polled := []func(time.Duration) scheme{
		func(iv time.Duration) scheme {
			return scheme{name: "LCF", interval: iv, make: func([]float64) dispatcher { return &lcf{} }}
		},
	}
	for _, m := range c.Classes {
		polled = append(polled, func(iv time.Duration) scheme {
			return scheme{name: fmt.Sprintf("AWFD m=%d", m), interval: iv, make: func([]float64) dispatcher { return newAWFD(m, n) }}
		})
	}
	for _, mk := range polled {
		var ser Series
		for _, iv := range c.Intervals {
			s := mk(iv)
			ser.Name = s.name
			p := omega(s)
			p.X = ms(iv)
			ser.Points = append(ser.Points, p)
		}
		r.Fig8 = append(r.Fig8, ser)
	}
	r.Fig10.Name = fmt.Sprintf("AWFD at %v", c.FigInterval)
	for _, m := range c.FigM {
		s := scheme{interval: c.FigInterval, make: func([]float64) dispatcher { return newAWFD(m, n) }}
		if m == 0 {
			s.make = func([]float64) dispatcher { return &exact{newWeighted(make([]float64, n))} }
		}
		p := omega(s)
		p.X = float64(m)
		r.Fig10.Points = append(r.Fig10.Points, p)
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteText prints both figures as tables.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Spotlight Fig. 8 — service utilisation Ω vs update interval (%d flows, %d VIPs × %d DIPs, %d seeds; ± standard error)\n",
		r.Config.Flows, r.Config.VIPs, r.Config.DIPsPerVIP, len(r.Config.Seeds))
	fmt.Fprintf(w, "%-18s", "interval (ms)")
	for _, iv := range r.Config.Intervals {
		fmt.Fprintf(w, " %14.0f", ms(iv))
	}
	fmt.Fprintln(w)
	for _, s := range r.Fig8 {
		fmt.Fprintf(w, "%-18s", s.Name)
		for _, p := range s.Points {
			fmt.Fprintf(w, " %8.4f±%.4f", p.Omega, p.StdErr)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nSpotlight Fig. 10 — AWFD Ω vs m at %v\n", r.Config.FigInterval)
	for _, p := range r.Fig10.Points {
		name := fmt.Sprintf("m=%.0f", p.X)
		if p.X == 0 {
			name = "m=∞"
		}
		fmt.Fprintf(w, "%-6s %.4f±%.4f\n", name, p.Omega, p.StdErr)
	}
	return nil
}
