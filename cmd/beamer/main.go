// Command beamer is the single binary of the Beamer load balancer: the mux
// daemon, the server agent, the controller and its CLI, the lab and the
// benchmarks are its subcommands. Each subcommand lives in its own file of
// this package and registers itself with the root command in init.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "beamer",
	Short:         "Beamer: a stateless datacenter layer-4 load balancer",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	documentEnv(rootCmd)
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "beamer:", err)
		os.Exit(1)
	}
}
