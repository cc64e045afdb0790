package main

import "github.com/spf13/cobra"

// simCmd groups the simulations that reproduce the papers' figures.
var simCmd = &cobra.Command{
	Use:   "sim",
	Short: "Reproduce the papers' evaluations in simulation",
}

func init() { rootCmd.AddCommand(simCmd) }
