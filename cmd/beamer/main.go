// Command beamer is the product binary of the Beamer load balancer: the mux
// daemon, the server agent, the controller and its CLI (ctl), and the
// operator's tools (decode, status, inspect, capture, version). The lab, the
// simulations and the benchmarks are the beamer-lab command. Each
// subcommand lives in its own file of this package as a constructor,
// new…Command, that newRootCommand calls.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// newRootCommand builds the whole command tree: the root's persistent
// flags (--log-level, --log-format), BEAMER_ variables applied before any
// command runs, and every subcommand.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "beamer",
		Short:         "Beamer: a stateless datacenter layer-4 load balancer",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	logs := addLogFlags(root) // logging.go
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := applyEnv(cmd); err != nil { // env.go
			return err
		}
		return logs.Install()
	}
	root.SetFlagErrorFunc(flagError) // flags.go
	root.AddCommand(
		newMuxCommand(),
		newAgentCommand(),
		newControllerCommand(),
		newCtlCommand(),
		newDecodeCommand(),
		newDecodePcapCommand(),
		newVersionCommand(),
		newManpagesCommand(),
	)
	documentEnv(root)
	return root
}

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "beamer:", err)
		os.Exit(1)
	}
}
