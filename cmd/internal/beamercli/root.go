package beamercli

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
		newStoreCommand(), // store_members.go
		newDecodeCommand(),
		newDecodePcapCommand(),
		newVersionCommand(),
		newManpagesCommand(),
	)
	documentEnv(root)
	return root
}

// Main runs the beamer command: cmd/beamer's whole main.
func Main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "beamer:", err)
		os.Exit(1)
	}
}
