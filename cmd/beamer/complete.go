package main

import (
	"context"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controller"
	"github.com/spf13/cobra"
)

// completeInstance completes the NAME argument of ctl commands with the
// instances in the store named by --store (shell completion: `beamer
// completion bash|zsh|fish`). It gives up quietly after 3 s: a slow store
// must not hang the shell.
func completeInstance(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 0 || !strings.HasPrefix(strings.Fields(cmd.Use + " x")[1], "NAME") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	url, err := cmd.Flags().GetString("store")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, t, err := openStore(ctx, url)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer st.Close()
	names, err := controller.New(st, t.Root, controller.Options{}).Instances(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
