package beamercli

import (
	"context"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/spf13/cobra"
)

// completeInstance completes the NAME argument of ctl commands with the
// instances the controller at --api lists (shell completion: `beamer
// completion bash|zsh|fish`). It gives up quietly after 3 s: a slow store
// must not hang the shell.
func completeInstance(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 0 || !strings.HasPrefix(strings.Fields(cmd.Use + " x")[1], "NAME") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	addrs, err := cmd.Flags().GetStringSlice("api")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f := &apiClientFlags{addrs: &addrs, insecure: new(bool)}
	f.files.Cert, _ = cmd.Flags().GetString("cert")
	f.files.Key, _ = cmd.Flags().GetString("key")
	f.files.CA, _ = cmd.Flags().GetString("ca")
	*f.insecure, _ = cmd.Flags().GetBool("insecure")
	var names []string
	err = f.withClient(3*time.Second, func(ctx context.Context, c *mgmtapi.Client) error {
		var err error
		names, err = c.Instances(ctx)
		return err
	})
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
