package migration

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Report is `beamer-lab sim prism`'s result, each part beside the paper's.
type Report struct {
	Options    SimOptions       `json:"options"`
	Scaling    string           `json:"scaling"`
	Fig6       []Fig6Point      `json:"fig6_table1"`
	Fig7       []Fig7Point      `json:"fig7"`
	Alg2       []Alg2Point      `json:"appendix_a"`
	Collisions []CollisionPoint `json:"collisions"`
	// SecondsBetween48 is §5.3's expected time between two same-signature
	// SYNs within 5 s at 1M SYN/s with a 48-bit hash (paper: 23 s).
	SecondsBetween48 float64 `json:"seconds_between_collisions_48bit"`
}

// Simulate runs every simulation.
func Simulate(o SimOptions) *Report {
	r := &Report{Options: o, Scaling: fmt.Sprintf("Fig. 6 and Table 1 at 1M/%.0f SYN/s (shares unchanged; per-update counts reported measured and ×%.0f); Fig. 7 at the paper's size; Appendix A at %.0f SYN/s instead of 10,000 (per-bin counts /%.0f)",
		o.Scale, o.Scale, o.Alg2Rate, 10000/o.Alg2Rate)}
	for _, lt := range []struct {
		name   string
		lo, hi float64
	}{{"U[1,10] s (mean 5.5)", 1, 10}, {"U[0.5,3.5] s (mean 2)", 0.5, 3.5}} {
		for _, u := range []float64{15, 30, 60, 120} {
			var p Fig6Point
			p.UpdatesPerMin, p.Lifetime = u, lt.name
			for s := range o.Seeds {
				mx, mean, per := Fig6(o, u, lt.lo, lt.hi, uint64(s+1))
				p.MaxPctInMCT += mx / float64(o.Seeds)
				p.MeanPctInMCT += mean / float64(o.Seeds)
				p.MigratedPerUpd += per / float64(o.Seeds)
			}
			p.MigratedScaled = p.MigratedPerUpd * o.Scale
			r.Fig6 = append(r.Fig6, p)
		}
	}
	// Fig. 7: a bin of 10,000 affected signatures, delta = 100 SYN/s.
	for _, rho := range []float64{1000, 2000, 5000, 25000} {
		r.Fig7 = append(r.Fig7, Fig7(rho, 10000, 100, o.Runs, 7))
	}
	for _, T := range []float64{50, 500} {
		rate := o.Alg2Rate
		if T == 500 {
			rate /= 10 // keeps the live connections of a bin comparable
		}
		p := Alg2Point{Lifetime: T}
		for s := range o.Seeds {
			p.Random += Alg2(rate, T, Random, false, uint64(s+1)) / float64(o.Seeds)
			p.NonWeighted += Alg2(rate, T, ByLoad, false, uint64(s+1)) / float64(o.Seeds)
			p.Alg2 += Alg2(rate, T, ByLoad, true, uint64(s+1)) / float64(o.Seeds)
		}
		p.GainNW = 100 * (1 - p.NonWeighted/p.Random)
		p.GainAlg2 = 100 * (1 - p.Alg2/p.Random)
		r.Alg2 = append(r.Alg2, p)
	}
	for _, bits := range []int{24, 28, 32} {
		r.Collisions = append(r.Collisions, Collisions(bits, 200000, 3))
	}
	r.SecondsBetween48 = SecondsBetweenCollisions(1e6, 5, 48)
	return r
}

// WriteText prints the report as tables beside the paper's numbers.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Scaling: %s\n\n", r.Scaling)
	fmt.Fprintln(tw, "Fig. 6 / Table 1: 100 VIPs × 100 DIPs, one bin per DIP, a random DIP replaced per update")
	fmt.Fprintln(tw, "lifetime\tupdates/min\tmax % in MCT\tmean %\tmigrated/update (measured)\t(at 1M SYN/s)\tpaper")
	for _, p := range r.Fig6 {
		paper := "Fig. 6: ≤ 0.06% at 120/min; Table 1: 543–546 (5 s), 249–250 (2 s)"
		fmt.Fprintf(tw, "%s\t%.0f\t%.4f\t%.4f\t%.2f\t%.0f\t%s\n", p.Lifetime, p.UpdatesPerMin, p.MaxPctInMCT, p.MeanPctInMCT, p.MigratedPerUpd, p.MigratedScaled, paper)
	}
	fmt.Fprintln(tw, "\nFig. 7: Algorithm 1 on a bin of 10,000 signatures, 100 new SYN/s for the bin")
	fmt.Fprintln(tw, "MCT writes/s\tmean new signatures per round\truns by rounds\tmax rounds\tpaper")
	for _, p := range r.Fig7 {
		fmt.Fprintf(tw, "%.0f\t%.2f\t%v\t%d\tno run needed more than 3 rounds\n", p.WriteRate, p.MeanNew, p.RoundsCount, p.MaxRounds)
	}
	fmt.Fprintln(tw, "\nAppendix A (Fig. 14): MCT load (entry·s) taking down 250 of 1,000 bins, one per second")
	fmt.Fprintln(tw, "lifetime T\trandom\tfewest\tAlgorithm 2\tfewest gain\tAlg. 2 gain\tpaper (gain over random)")
	for _, p := range r.Alg2 {
		paper := "13.2% / 15% (T = 50 s)"
		if p.Lifetime == 500 {
			paper = "29.1% / 35% (T = 500 s)"
		}
		fmt.Fprintf(tw, "%.0f s\t%.0f\t%.0f\t%.0f\t%.1f%%\t%.1f%%\t%s\n", p.Lifetime, p.Random, p.NonWeighted, p.Alg2, p.GainNW, p.GainAlg2, paper)
	}
	fmt.Fprintln(tw, "\nSignature collisions: colliding pairs among 200,000 real signatures truncated to b bits")
	fmt.Fprintln(tw, "bits\tpredicted pairs\tmeasured pairs")
	for _, c := range r.Collisions {
		fmt.Fprintf(tw, "%d\t%.1f\t%.0f\n", c.Bits, c.Predicted, c.Measured)
	}
	fmt.Fprintf(tw, "48-bit hash, 1M SYN/s, Δ = 5 s: a same-signature pair every %.1f s (paper §5.3: 23 s)\n", r.SecondsBetween48)
	return tw.Flush()
}
