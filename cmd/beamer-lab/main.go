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

var rootCmd = &cobra.Command{
	Use:           "beamer-lab",
	Short:         "Beamer's lab: the demo, the papers' experiments, simulations and benchmarks",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// envFlags are the flags BEAMER_ variables give, as for beamer.
var envFlags = []string{"log-level", "log-format"}

var logFlags rootflags.Log

func init() {
	logFlags.Register(rootCmd.PersistentFlags())
	rootCmd.PersistentFlags().StringVar(&beamerFlag, "beamer", "", "the beamer binary whose mux, agent and controller the lab runs (default: beamer beside this binary, else on PATH)")
	rootCmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := rootflags.ApplyEnv(cmd, envFlags); err != nil {
			return err
		}
		return logFlags.Install()
	}
}

func main() {
	rootflags.DocumentEnv(rootCmd, envFlags)
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "beamer-lab:", err)
		os.Exit(1)
	}
}
