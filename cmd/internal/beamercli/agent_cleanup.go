package beamercli

import (
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/node/agentd"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/spf13/cobra"
)

// `beamer agent cleanup`: the explicit uninstall. A stopped agent leaves
// its programs pinned and decapsulating (agentd/cleanup.go) so that the
// next start adopts them; this removes them and undoes the node setup.
func newAgentCleanupCommand() *cobra.Command {
	var (
		configPath, iface string
		node              agentd.Options
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Uninstall a stopped agent: detach its pinned programs, drop its keys, undo its node setup",
		Long: `A stopped agent (SIGTERM, systemctl stop or restart, SIGUSR2, a crash) leaves
its programs pinned and decapsulating, with its Cheetah keys, and the VIPs on
loopback, so the next agent takes over without a gap. cleanup removes all of it:
the server's load-balanced connections then stop. It refuses while an agent runs
on the interface. Give the agent's --iface (or its --config) and, if the agent
had them, its --pin-dir and --state-file.`,
		Example: `  systemctl stop beamer-agent && beamer agent cleanup --config /etc/beamer/agent.yaml`,
		Args:    cobra.NoArgs,
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the agent's configuration file (for its interface)")
	cmd.Flags().StringVar(&iface, "iface", "", "the agent's interface")
	cmd.Flags().StringVar(&node.StateFile, "state-file", "", "the agent's --state-file (default /run/beamer/agent-NETNS-IFACE.json)")
	cmd.Flags().StringVar(&node.PinDir, "pin-dir", "", "the agent's --pin-dir (default /sys/fs/bpf/beamer/agent-NETNS-IFACE)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if configPath != "" {
			c, err := config.LoadAgent(configPath)
			if err != nil {
				return err
			}
			if iface != "" && iface != c.Interface {
				return fmt.Errorf("--iface %s, but the agent of %s runs on %s", iface, configPath, c.Interface)
			}
			iface = c.Interface
		}
		if iface == "" {
			return errors.New("give the agent's --iface or --config")
		}
		return agentd.Cleanup(iface, node)
	}
	return cmd
}
