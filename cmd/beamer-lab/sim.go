package main

import "github.com/spf13/cobra"

// newSimCommand groups the simulations that reproduce the papers' figures.
func newSimCommand() *cobra.Command {
	sim := &cobra.Command{
		Use:   "sim",
		Short: "Reproduce the papers' evaluations in simulation",
	}
	sim.AddCommand(newSimAwfdCommand(), newSimCheetahCommand(), newSimHashingCommand(), newSimPrismCommand())
	return sim
}
