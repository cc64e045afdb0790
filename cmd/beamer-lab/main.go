// Command beamer-lab is the research wing's command: the demo, the namespace
// lab that reproduces the papers' experiments, the simulations and the
// benchmarks. The product's daemons and CLI are the beamer command; the lab
// runs that binary's mux, agent and controller (--beamer).
package main

import (
	"fmt"
	"os"

	"github.com/beamer-lb/beamer/cmd/internal/rootflags"
	"github.com/spf13/cobra"
)

// envFlags are the flags BEAMER_ variables give, as for beamer.
var envFlags = []string{"log-level", "log-format"}

// newRootCommand builds the command tree: the root's persistent flags
// (--log-level, --log-format, --beamer) and every subcommand.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "beamer-lab",
		Short:         "Beamer's lab: the demo, the papers' experiments, simulations and benchmarks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var logs rootflags.Log
	logs.Register(root.PersistentFlags())
	root.PersistentFlags().StringVar(&beamerFlag, "beamer", "", "the beamer binary whose mux, agent and controller the lab runs (default: beamer beside this binary, else on PATH)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := rootflags.ApplyEnv(cmd, envFlags); err != nil {
			return err
		}
		return logs.Install()
	}
	root.AddCommand(newDemoCommand(), newLabCommand(), newSimCommand(), newBenchCommand(), newMuxCommand())
	rootflags.DocumentEnv(root, envFlags)
	return root
}

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "beamer-lab:", err)
		os.Exit(1)
	}
}
