package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/beamer-lb/beamer/research/lab"
	"github.com/spf13/cobra"
)

// demoStrategies are what `beamer-lab demo` runs by default.
var demoStrategies = lab.Strategies()

// newLabCommand is `beamer-lab lab`: the experiments in a namespace datacenter.
func newLabCommand() *cobra.Command {
	labCmd := &cobra.Command{
		Use:   "lab",
		Short: "Run the Beamer paper's §6 experiments in a namespace datacenter",
		Long: `A datacenter in network namespaces on this machine: clients with two paths each,
a border router (FRR bgpd, ECMP with a 5-tuple hash over the muxes), muxes that
announce the VIP over BGP, servers running the agent and an HTTP file server, and
the controller with its store. Real TCP, HTTP and MPTCP traffic; the clients count
the connections that broke. Needs root and FRR (scripts/setup.sh installs it).`,
	}
	labCmd.AddCommand(labRunCmd(), labExperimentsCmd(), labAWFDCmd(), labCheetahFCTCmd())
	return labCmd
}

func labExperimentsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "experiments",
		Short: "List the built-in experiments and the scenario file actions",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			for _, name := range lab.ExperimentOrder {
				fmt.Printf("%-13s %s\n", name, lab.ExperimentTitle(name))
			}
			fmt.Printf("\nbuilt-in scenarios (--scenario NAME; CI-sized, --stretch F for longer):\n")
			for _, name := range lab.ScenarioNames() {
				fmt.Printf("%-20s %s\n", name, lab.ScenarioTitle(name))
			}
			fmt.Printf("\nscenario files (--scenario FILE): `servers I…` and `muxes I…` (running at the start),\nsettings `window D`, `bind vip|all`, `idle N EVERY`, `churn FROM UNTIL EVERY SERVERS`,\nthen `TIME ACTION ARGS…` lines, the last one `end`. Actions:\n%s\n", lab.ActionHelp())
		},
	}
}

func labRunCmd() *cobra.Command {
	var (
		f          labFlags
		names      []string
		scenario   string
		strategies []string
		size       string
		asJSON     bool
		out, keep  string
		invPath    string
		stretch    float64
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run experiments (or a scenario file) for each strategy and print ours beside the paper's",
		Example: `  beamer-lab lab run --experiment affinity --removed 1-4
  beamer-lab lab run --experiment all --size ci --json
  beamer-lab lab run --scenario my.scenario --strategy beamer
  beamer-lab lab run --scenario rolling-removal --size ci          # a built-in scenario
  beamer-lab lab run --scenario short-window --size paper --stretch 1.5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needRoot("the lab"); err != nil {
				return err
			}
			if err := checkStrategies(strategies); err != nil {
				return err
			}
			if (len(names) > 0) == (scenario != "") {
				return errors.New("give --experiment NAME (or all) or --scenario FILE")
			}
			var sc *lab.Scenario
			if scenario != "" {
				var err error
				if sc, err = loadScenario(cmd, scenario, stretch); err != nil {
					return err
				}
				names = []string{"affinity"} // parameter defaults only
			} else if cmd.Flags().Changed("stretch") {
				return errors.New("--stretch applies to --scenario runs")
			}
			if slices.Contains(names, "all") {
				names = lab.ExperimentOrder
			}
			runs, err := f.plan(cmd, names, strategies, size, sc)
			if err != nil {
				return err
			}
			bin, err := beamerBinary()
			if err != nil {
				return err
			}
			progress := os.Stderr
			if !asJSON {
				progress = os.Stdout
			}
			ctx, stop := interruptible()
			defer stop()
			var made []*lab.Inventory
			if invPath != "" {
				// Written whatever happens, after the clean-up: the clean-up
				// test reads it to check nothing of the runs remains.
				defer func() {
					if b, err := json.Marshal(made); err == nil {
						os.WriteFile(invPath, b, 0o644)
					}
				}()
			}
			var results []*lab.Result
			for i, run := range runs {
				name := run.Params.Experiment
				if run.Scenario != nil {
					name = run.Scenario.Name
				}
				fmt.Fprintf(progress, "\n== run %d/%d: %s, strategy %s\n", i+1, len(runs), name, run.Params.Strategy)
				if keep != "" {
					run.Dir = filepath.Join(keep, fmt.Sprintf("%02d-%s-%s", i+1, name, run.Params.Strategy))
				}
				run.Progress, run.Beamer = progress, bin
				run.Inventory = func(inv *lab.Inventory) { made = append(made, inv) }
				r, err := lab.Run(ctx, run)
				if err != nil {
					return fmt.Errorf("%s/%s: %w", name, run.Params.Strategy, err)
				}
				results = append(results, r)
			}
			return reportRuns(results, asJSON, out, progress)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&names, "experiment", nil, "experiments to run: "+lab.ExperimentNames()+", or all")
	fl.StringVar(&scenario, "scenario", "", "scenario file, or built-in scenario name, to run instead of an experiment (see `beamer-lab lab experiments`)")
	fl.Float64Var(&stretch, "stretch", 1, "multiply every time of the scenario (events, window, idle period, churn) by this factor")
	fl.StringSliceVar(&strategies, "strategy", lab.Strategies(), "strategies, each run in turn: "+strings.Join(lab.Strategies(), ", "))
	fl.StringVar(&size, "size", lab.SizePaper, "parameter set: "+strings.Join(lab.Sizes, ", ")+" (flags below override it)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per run (progress goes to stderr)")
	fl.StringVar(&out, "out", "lab-results", "directory for the plots and results.json (\"\" = none)")
	fl.StringVar(&keep, "keep-logs", "", "keep each run's directory (daemon logs, router and store files) under this directory")
	fl.StringVar(&invPath, "inventory", "", "write what each run created (namespaces, processes, BPF programs) as JSON to this file after clean-up")
	fl.MarkHidden("inventory")
	f.register(cmd)
	return cmd
}

// loadScenario reads --scenario (a file or a built-in name), stretched by
// --stretch, its window dropped when --window is given.
func loadScenario(cmd *cobra.Command, scenario string, stretch float64) (*lab.Scenario, error) {
	sc, err := lab.LoadScenario(scenario)
	if err != nil {
		return nil, err
	}
	if stretch <= 0 || stretch > 100 {
		return nil, fmt.Errorf("--stretch %v: want a factor in (0, 100]", stretch)
	}
	sc.Stretch(stretch)
	if cmd.Flags().Changed("window") {
		sc.Window = 0 // --window wins over the file's `window`
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// reportRuns prints the runs' table (or JSON) and writes the plots and
// results.json into out ("" = none).
func reportRuns(results []*lab.Result, asJSON bool, out string, progress io.Writer) error {
	if asJSON {
		if err := lab.PrintJSON(os.Stdout, results); err != nil {
			return err
		}
	} else {
		fmt.Println()
		lab.WriteTable(os.Stdout, results)
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		files, err := lab.WritePlots(out, results)
		if err != nil {
			return err
		}
		if err := lab.WriteJSON(out, results); err != nil {
			return err
		}
		fmt.Fprintf(progress, "\n%d plots and results.json in %s/\n", len(files), out)
	}
	return nil
}

// interruptible is a context that ends on Ctrl-C or SIGTERM, so the lab
// cleans up before the process exits.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

func needRoot(what string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s creates network namespaces and loads BPF programs: run it as root", what)
	}
	return nil
}

func checkStrategies(s []string) error {
	if err := lab.CheckStrategies(s); err != nil {
		return fmt.Errorf("--strategy: %w", err)
	}
	return nil
}
