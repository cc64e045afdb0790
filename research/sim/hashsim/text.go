package hashsim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as tables, each with its parameters and the
// paper's figure beside ours ("–" where the paper gives none).
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	c := r.Config
	section := func(title string, params string, header ...string) {
		fmt.Fprintf(tw, "\n%s\n%s\n", title, params)
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	}
	row := func(cells ...any) {
		for _, x := range cells {
			fmt.Fprintf(tw, "%v\t", x)
		}
		fmt.Fprintln(tw)
	}

	section("Table 1 (Beamer appendix): stable vs Maglev vs consistent vs rendezvous",
		fmt.Sprintf("servers=%d buckets=%d consistent vnodes=%d reps=%d seed=%d; imbalance and rules before churn, *after = after removing churn%% of servers",
			c.Table1Servers, c.Table1Buckets, c.Table1VNodes, c.Reps, c.Seed),
		"algorithm", "churn%", "imbalance", "paper", "rules", "paper", "innocent%", "paper", "changed%", "imbalance after", "rules after")
	for _, x := range r.Table1 {
		row(x.Algorithm, x.ChurnPct, f3(x.Imbalance), opt(x.Paper.Imbalance, "%.1f"), x.RangeRules, optInt(x.Paper.RangeRules),
			f3(x.InnocentDisruptionPct), opt(x.Paper.InnocentDisruptionPct, "%.1f"), f3(x.ChangedEntriesPct), f3(x.ImbalanceAfter), fmt.Sprintf("%.0f", x.RangeRulesAfter))
	}

	section("Maglev §5.3 balance: over-provisioning of the busiest backend, (max/avg − 1)",
		fmt.Sprintf("backends=%d Karger points per backend=%d, mean of %d draws of backend ids", c.Backends, c.KargerVNodes, c.BalanceReps),
		"algorithm", "table size", "over-prov %", "paper %")
	for _, x := range r.MaglevBalance {
		row(x.Algorithm, x.TableSize, f3(x.OverprovisionPct), opt(x.PaperOverprovisionPct, "%.1f"))
	}

	section("Maglev §5.3 resilience: entries changed by concurrent backend failures",
		fmt.Sprintf("backends=%d reps=%d (minimum = the failed backends' own entries)", c.Backends, c.Reps),
		"table size", "failures %", "failed", "changed %", "minimum %")
	for _, x := range r.MaglevResilience {
		row(x.TableSize, x.FailurePct, x.Failed, f3(x.ChangedPct), f3(x.MinimumPct))
	}

	section("Table build time (wall clock, median)",
		fmt.Sprintf("backends=%d; paper: Maglev on Google's hardware", c.Backends),
		"algorithm", "table size", "ms", "runs", "paper ms")
	for _, x := range r.BuildTimeMs {
		row(x.Algorithm, x.TableSize, f3(x.Ms), x.Runs, opt(x.PaperMs, "%.1f"))
	}

	section("Fragmentation (Beamer appendix): fresh cluster after one operation",
		fmt.Sprintf("dips=%d buckets=%d", c.FragDIPs, c.FragBuckets),
		"operation", "dips", "rules/DIP", "paper", "moved buckets")
	for _, x := range r.Fragmentation {
		row(x.Operation, x.DIPs, f3(x.RulesPerDIP), opt(x.PaperRules, "%.1f"), x.MovedBuckets)
	}

	section("Defragmentation run (Beamer Figure 25) from the worst case",
		fmt.Sprintf("dips=%d buckets=%d bmax=%d target fr=%v", c.FragDIPs, c.FragBuckets, c.Defrag.MaxMoves, c.Defrag.TargetRate),
		"iteration", "rules/DIP", "moved", "cumulative", "misplaced")
	for _, x := range r.DefragRun {
		row(x.Iteration, f3(x.RulesPerDIP), x.MovedBuckets, x.CumulativeMoved, x.MisplacedBuckets)
	}

	if len(r.Scale) > 0 {
		section("Controller scale (Beamer §6.4)",
			fmt.Sprintf("dips=%d × %d buckets; delta = 12 B per bucket change; alloc = bytes allocated by the operation", c.ScaleDIPs, c.ScalePerDIP),
			"operation", "dips before", "dips after", "ms", "changes", "delta B", "zlib B", "alloc MB", "rules/DIP after")
		for _, x := range r.Scale {
			row(x.Operation, x.DIPsBefore, x.DIPsAfter, f3(x.Ms), x.Changes, x.DeltaBytes, x.DeltaZlibBytes,
				fmt.Sprintf("%.1f", float64(x.AllocBytes)/1e6), f3(x.RulesPerDIP))
		}
	}
	return tw.Flush()
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

func opt(p *float64, format string) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf(format, *p)
}

func optInt(p *int) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprint(*p)
}
