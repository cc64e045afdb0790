package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/beamer-lb/beamer/research/bench/dpbench"
	"github.com/spf13/cobra"
)

// newBenchCommand is `beamer-lab bench`: the data-plane, control-plane and
// document benchmarks.
func newBenchCommand() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Benchmarks of Beamer's components"}
	bench.AddCommand(benchDataplaneCmd(), benchSaveBaselineCmd(), benchControlPlaneCmd(), benchDocCmd())
	return bench
}

// benchDataplaneFlags are `bench dataplane`'s flags.
type benchDataplaneFlags struct {
	asJSON, quick  bool
	noLive         bool
	beamerOnly     bool
	agentOnly      bool
	maglevOnly     bool
	repeat, trials int
	perPacket      int
	compare        string
	compareAgent   string
}

// benchDataplaneCmd is `beamer-lab bench dataplane`.
func benchDataplaneCmd() *cobra.Command {
	var f benchDataplaneFlags
	dp := &cobra.Command{
		Use:   "dataplane",
		Short: "Per-packet cost of the mux (Beamer and Maglev strategies) and the agent, against the XDP floor",
		Long: `Measures each data-plane program inside the kernel (BPF_PROG_TEST_RUN, in a network
namespace of its own, on CPU 0) on the same packets: the XDP floors, the mux's strategies
(Beamer at several bucket-table sizes, Maglev, Prism, Cheetah), the agent in tc and in
XDP. Each row two ways: batched (one test run of N repetitions of the benchmark build,
which undoes its packet changes) and per packet (one test run of the production program
per packet, repeat 1); both kernel-reported time, flows in random order, median (min–max)
over many short trials, each trial's path checked by the program's decision counter; net
of an empty program per trial (median) and quiet (quickest trial minus the empty program's
quickest: the cost without a shared machine's bursts of other load). With
--compare FILE a saved baseline mux object (bench save-baseline) runs beside the current
one on the same maps; --compare-agent FILE does the same for an agent object (an earlier
commit's research/bench/dpbench/agentbench_bpfel.o, pkg/dataplane/agentbench_bpfel.o before
the benchmark builds moved there), batched and per packet. Then sends minimum-size packets through a mux on veth and reports
the forwarded rate, where packets were lost, and the CPU time of generator, mux and sink
(each on its own CPU where there are enough). docs/performance.md is generated from
these figures by 'beamer-lab bench doc' (scripts/perf-doc.sh). Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	dp.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object")
	dp.Flags().BoolVar(&f.beamerOnly, "beamer-only", false, "only the floors and the Beamer rows (scripts/mux-stages.sh)")
	dp.Flags().BoolVar(&f.agentOnly, "agent-only", false, "only the agent's rows (tc and XDP, IPv4 and IPv6)")
	dp.Flags().BoolVar(&f.maglevOnly, "maglev-only", false, "only the Maglev rows (maglev and maglev-lru, 1K and 1M flows)")
	dp.Flags().BoolVar(&f.quick, "quick", false, "a short run that only checks every program takes its path")
	dp.Flags().BoolVar(&f.noLive, "no-live", false, "skip the live-traffic part")
	n := func(v int) string { return dpbench.Thousands(fmt.Sprint(v)) }
	dp.Flags().IntVar(&f.repeat, "repeat", 0, fmt.Sprintf("repetitions per trial (default %s; quick %s)", n(dpbench.Full.Repeat), n(dpbench.Quick.Repeat)))
	dp.Flags().IntVar(&f.trials, "trials", 0, fmt.Sprintf("trials per figure, median and quickest reported (default %d; quick %d; with --compare an odd count is raised by one: each build goes first in half)", dpbench.Full.Trials, dpbench.Quick.Trials))
	dp.Flags().IntVar(&f.perPacket, "per-packet", 0, fmt.Sprintf("per-packet method: test runs of repeat 1 per trial (default %s; quick %s; 0 skips it)", n(dpbench.Full.PerPacket), n(dpbench.Quick.PerPacket)))
	dp.Flags().StringVar(&f.compare, "compare", "", "also measure this baseline mux object (benchmark build, from `beamer-lab bench save-baseline` or git show REV:research/bench/dpbench/muxbench_bpfel.o, REV:pkg/dataplane/muxbench_bpfel.o for older commits) on the same maps, in alternation")
	dp.Flags().StringVar(&f.compareAgent, "compare-agent", "", "also measure this baseline agent object (benchmark build, git show REV:research/bench/dpbench/agentbench_bpfel.o, REV:pkg/dataplane/agentbench_bpfel.o for older commits) on the current agent's maps, in alternation, batched and per packet")
	return dp
}

// options are the benchmark's options: the preset, the flags given over
// it, the baseline objects read.
func (f *benchDataplaneFlags) options(cmd *cobra.Command) (dpbench.Options, error) {
	o := dpbench.Full
	if f.quick {
		o = dpbench.Quick
	}
	if cmd.Flags().Changed("repeat") {
		o.Repeat = f.repeat
	}
	if cmd.Flags().Changed("trials") {
		o.Trials = f.trials
	}
	if cmd.Flags().Changed("per-packet") {
		o.PerPacket = f.perPacket
	}
	if o.Repeat < 1 || o.Trials < 1 || o.PerPacket < 0 {
		return o, fmt.Errorf("--repeat and --trials must be positive, --per-packet not negative")
	}
	o.BeamerOnly, o.AgentOnly, o.MaglevOnly = f.beamerOnly, f.agentOnly, f.maglevOnly
	if (o.BeamerOnly && o.AgentOnly) || (o.BeamerOnly && o.MaglevOnly) || (o.AgentOnly && o.MaglevOnly) {
		return o, fmt.Errorf("--beamer-only, --agent-only and --maglev-only exclude each other")
	}
	if f.compare != "" {
		obj, err := os.ReadFile(f.compare)
		if err != nil {
			return o, fmt.Errorf("--compare: %w", err)
		}
		o.Baseline, o.BaselineName = obj, f.compare
	}
	if f.compareAgent != "" {
		obj, err := os.ReadFile(f.compareAgent)
		if err != nil {
			return o, fmt.Errorf("--compare-agent: %w", err)
		}
		o.AgentBaseline, o.AgentBaselineName = obj, f.compareAgent
	}
	return o, nil
}

func (f *benchDataplaneFlags) run(cmd *cobra.Command) error {
	if os.Geteuid() != 0 {
		return errors.New("the benchmark loads BPF programs and creates a network namespace: run it as root")
	}
	o, err := f.options(cmd)
	if err != nil {
		return err
	}
	var progress io.Writer = os.Stderr
	rep, err := dpbench.Run(o, progress)
	if err != nil {
		return err
	}
	if !f.noLive {
		lo := dpbench.LiveFull
		if f.quick {
			lo = dpbench.LiveQuick
		}
		if rep.Live, err = dpbench.RunLive(lo, progress); err != nil {
			return err
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Print(os.Stdout)
	return nil
}

// benchSaveBaselineCmd is `beamer-lab bench save-baseline`.
func benchSaveBaselineCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "save-baseline FILE",
		Short: "Write this build's mux benchmark object, for a later `bench dataplane --compare FILE`",
		Long: `Writes the benchmark build of the mux compiled into this binary (the same bytes as
research/bench/dpbench/muxbench_bpfel.o of its commit). After changing the mux, run
'beamer-lab bench dataplane --compare FILE' with the new binary: both objects run in the
same process on the same maps, in alternation. A baseline whose maps the current
build lays out differently is refused with the differences named.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return os.WriteFile(args[0], dpbench.MuxBenchObject(), 0o644)
		},
	}
}
