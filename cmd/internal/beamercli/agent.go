package beamercli

import (
	"context"
	"errors"
	"fmt"
	"github.com/coreos/go-systemd/v22/daemon"
	"log/slog"
	"net/netip"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentd"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/spf13/cobra"
)

// parseAgentVIP reads VIP:BUCKETS[:WINDOW], e.g. 198.18.100.1:6400:4m, or
// with an IPv6 VIP in brackets, [2001:db8:100::1]:6400:4m.
func parseAgentVIP(s string) (config.AgentVIP, error) {
	host, rest := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return config.AgentVIP{}, fmt.Errorf("--vip %q: want [IPv6]:BUCKETS[:WINDOW]", s)
		}
		host, rest = s[1:end], s[end+2:]
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, rest = s[:i], s[i+1:]
	}
	parts := append([]string{host}, strings.Split(rest, ":")...)
	if rest == "" || len(parts) > 3 {
		return config.AgentVIP{}, fmt.Errorf("--vip %q: want VIP:BUCKETS[:WINDOW] (an IPv6 VIP in brackets: [2001:db8:100::1]:6400)", s)
	}
	vip, err := netip.ParseAddr(parts[0])
	if err != nil {
		return config.AgentVIP{}, fmt.Errorf("--vip %q: %w", s, err)
	}
	b, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return config.AgentVIP{}, fmt.Errorf("--vip %q: bucket count: %w", s, err)
	}
	v := config.AgentVIP{VIP: vip, Buckets: uint32(b)}
	if len(parts) == 3 {
		w, err := time.ParseDuration(parts[2])
		if err != nil {
			return config.AgentVIP{}, fmt.Errorf("--vip %q: window: %w", s, err)
		}
		v.ChainWindow = &w
	}
	return v, nil
}

// agentFlags are `beamer agent`'s flags.
type agentFlags struct {
	configPath, iface, addr, addr6, metricsAddr, apiAddr string
	capacityBps                                          float64
	id                                                   uint16
	vips, trusted, controllers                           []string
	noVIPs, noMPTCP                                      bool
	node                                                 agentd.Options
	cheetahVIPs                                          *bool
	cheetahKeys                                          *string
	guePorts                                             *[]uint
	apiTLS                                               *nodeauth.Files
}

// newAgentCommand is `beamer agent` with its status, inspect, capture and
// cleanup.
func newAgentCommand() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the server agent: decapsulation and daisy chaining on a server",
		Long: `Runs the agent on a server, from a configuration file (--config) or flags.
Servers never talk to the control store: the agent needs its server id, the VIPs
it serves with their instance's bucket count, and the muxes' and servers' prefixes.`,
		Example: `  beamer agent --iface eth0 --id 1025 --vip 198.18.100.1:6400 --trusted 198.18.0.0/24`,
		Args:    cobra.NoArgs,
	}
	f.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return f.run(cmd) }
	cmd.AddCommand(newAgentStatusCommand(), newAgentInspectCommand(), newCaptureCommand("agent", dataplane.AgentCapturePoints), newAgentCleanupCommand())
	return cmd
}

func (f *agentFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.configPath, "config", "", "configuration file (YAML)")
	cmd.Flags().StringVar(&f.iface, "iface", "", "the server's interface")
	cmd.Flags().StringVar(&f.addr, "addr", "", "the server's address (default: the interface's first IPv4)")
	cmd.Flags().StringVar(&f.addr6, "addr6", "", "the server's IPv6 address, for IPv6 VIPs (default: the interface's first global IPv6)")
	cmd.Flags().Uint16Var(&f.id, "id", 0, "server id, 1025–65535")
	cmd.Flags().StringSliceVar(&f.vips, "vip", nil, "VIP:BUCKETS[:WINDOW] served (repeatable): the instance's bucket count and, for beamer and cheetah, its chain window (default 4m); 0s for maglev, prism, awfd")
	f.cheetahVIPs = cmd.Flags().Bool("cheetah", false, "the --vip VIPs belong to a cheetah instance: take the cookie keys the controller pushes (no other VIP takes keys)")
	f.cheetahKeys = cmd.Flags().String("cheetah-keys-file", "", "the --vip VIPs belong to a cheetah instance with the keys KEY0,KEY1[,CURRENT] in this file (mode 600; or env "+cheetahKeysEnv+"), for agents the controller does not push keys to")
	cmd.Flags().StringSliceVar(&f.trusted, "trusted", nil, "prefix of muxes and servers allowed to send encapsulated packets (repeatable)")
	cmd.Flags().StringSliceVar(&f.controllers, "controllers", nil, "prefix of the controllers allowed to push Cheetah keys to the agent API (repeatable; default the --trusted prefixes)")
	cmd.Flags().BoolVar(&f.noVIPs, "no-manage-vips", false, "do not put VIPs on loopback nor set ARP sysctls")
	cmd.Flags().BoolVar(&f.noMPTCP, "no-mptcp", false, "do not advertise VIP:id to MPTCP clients")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics", "", "serve /metrics and /healthz on this address")
	cmd.Flags().Float64Var(&f.capacityBps, "capacity-bps", 0, "the interface's rate in bits/s for capacity reports (AWFD) when no tbf/htb qdisc states it")
	f.guePorts = cmd.Flags().UintSlice("gue-port", nil, fmt.Sprintf("UDP port on which GUE from trusted sources is decapsulated besides %d, always (repeatable): an encap-gue instance's --gue-port", forwarding.DefaultGUEPort))
	cmd.Flags().StringVar(&f.apiAddr, "api", "", `serve the agent API (health probes of VIP:port from this server, connections per bucket) on this address; default the server's address, port 9300; "off" to disable`)
	f.apiTLS = addAPITLSFlags(cmd) // node_tls.go
	cmd.Flags().BoolVar(&f.node.APIInsecure, "insecure", false, "allow the agent API without TLS on a non-loopback address: anyone on that network could probe through it, read its connections and push keys")
	cmd.Flags().StringVar(&f.node.StateFile, "state-file", "", "record of the sysctls, addresses and endpoints the agent changed, undone by `beamer agent cleanup` (default /run/beamer/agent-NETNS-IFACE.json)")
	cmd.Flags().StringVar(&f.node.XDP, "xdp", agentd.XDPAuto, `the XDP fast path in front of the tc program: "auto" (native XDP where the NIC's driver runs it, else tc alone), "native" (or fail), "off"`)
	cmd.Flags().StringVar(&f.node.PinDir, "pin-dir", "", `bpffs directory pinning the program so it outlives the process (default /sys/fs/bpf/beamer/agent-NETNS-IFACE; "-" = no pinning)`)
}

// config reads the configuration: the file (re-read on SIGHUP) or the
// flags that describe the server, then the flags that override either.
func (f *agentFlags) config(cmd *cobra.Command) (config.Agent, error) {
	var cfg config.Agent
	if f.configPath != "" {
		if f.iface != "" || f.id != 0 || len(f.vips) > 0 || len(f.trusted) > 0 {
			return cfg, errors.New("--config takes no --iface, --id, --vip or --trusted")
		}
		c, err := config.LoadAgent(f.configPath)
		if err != nil {
			return cfg, err
		}
		cfg = *c
	} else {
		var err error
		if cfg, err = f.serverConfig(); err != nil {
			return cfg, err
		}
	}
	if err := f.override(cmd, &cfg); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// serverConfig is the configuration the flags give without --config: the
// interface, server id, VIPs (with their cheetah keys) and trusted prefixes.
func (f *agentFlags) serverConfig() (config.Agent, error) {
	cfg := config.Agent{Interface: f.iface, ServerID: forwarding.ServerID(f.id)}
	for _, s := range f.vips {
		v, err := parseAgentVIP(s)
		if err != nil {
			return cfg, err
		}
		cfg.VIPs = append(cfg.VIPs, v)
	}
	text, err := cheetahKeysText("cheetah-keys-file", *f.cheetahKeys)
	if err != nil {
		return cfg, err
	}
	for i := range cfg.VIPs {
		if *f.cheetahVIPs || text != "" {
			cfg.VIPs[i].Strategy = forwarding.StrategyCheetah
		}
		if text != "" {
			ks, err := parseCheetahKeys(text)
			if err != nil {
				return cfg, err
			}
			cfg.VIPs[i].Cheetah = &ks
		}
	}
	for _, s := range f.trusted {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return cfg, fmt.Errorf("--trusted %q: %w", s, err)
		}
		cfg.Trusted = append(cfg.Trusted, p)
	}
	return cfg, nil
}

// override applies the flags that win over the file as over the defaults.
func (f *agentFlags) override(cmd *cobra.Command, cfg *config.Agent) error {
	for _, s := range f.controllers {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("--controllers %q: %w", s, err)
		}
		cfg.Controllers = append(cfg.Controllers, p)
	}
	if a, err := parseAddrFlag("addr", f.addr); err != nil {
		return err
	} else if a.IsValid() {
		cfg.Address = a
	}
	if a, err := parseAddrFlag("addr6", f.addr6); err != nil {
		return err
	} else if a.IsValid() {
		cfg.Address6 = a
	}
	if f.noVIPs {
		cfg.ManageVIPs = new(bool)
	}
	if f.noMPTCP {
		cfg.MPTCP = new(bool)
	}
	if f.metricsAddr != "" {
		cfg.Metrics = f.metricsAddr
	}
	for _, p := range *f.guePorts {
		if p == 0 || p > 65535 {
			return fmt.Errorf("--gue-port %d: a port is 1–65535", p)
		}
		cfg.GUEPorts = append(cfg.GUEPorts, uint16(p))
	}
	if cmd.Flags().Changed("capacity-bps") {
		cfg.CapacityBps = f.capacityBps // NaN, ±Inf, negative: refused by Validate
	}
	if f.apiAddr != "" {
		cfg.API = f.apiAddr
	}
	return nil
}

// run is the agent: start (adopting a pinned predecessor), serve until
// signalled, re-read --config on SIGHUP; on exit its programs stay pinned.
func (f *agentFlags) run(cmd *cobra.Command) error {
	build := func() (config.Agent, error) { return f.config(cmd) }
	cfg, err := build()
	if err != nil {
		return err
	}
	node := f.node
	if node.APITLS, err = serverTLS(f.apiTLS, nodeauth.RoleAgent); err != nil {
		return err
	}
	log := slog.Default() // --log-level, --log-format: logging.go
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := hangups()
	ctx, upgrading := upgradeContext(ctx)
	warnIfPinsDie(log, "agent", node.PinDir) // pinscope.go
	d, err := agentd.Start(cfg, node)
	if err != nil {
		return err
	}
	defer func() {
		if d == nil {
			return
		}
		// Every stop is a planned restart's first half (systemctl
		// restart, an upgrade): the programs, keys and node setup stay
		// for the next agent; `beamer agent cleanup` uninstalls.
		if err := d.Abandon(); err != nil {
			log.Warn("agent: releasing", "error", err)
		}
		log.Info("agent stopped: its programs stay pinned and decapsulating for the next agent (beamer agent cleanup removes them)", "upgrade", upgrading())
	}()
	log.Info("agent running", "interface", cfg.Interface, "address", d.Address(), "server_id", cfg.ServerID, "api", d.APIAddr())
	notifySystemd(log, daemon.SdNotifyReady)
	defer notifySystemd(log, daemon.SdNotifyStopping)
	if f.configPath == "" {
		go ignoreHangups(ctx, hup, log)
		<-ctx.Done()
	} else if d, err = reloadAgent(ctx, hup, build, d, cfg, node, log); err != nil { // reload.go
		d = nil // the previous one handed over: nothing to close
		return fmt.Errorf("SIGHUP: starting the agent from the new configuration (the pinned program keeps decapsulating): %w", err)
	}
	log.Info("agent stopping")
	return nil
}
