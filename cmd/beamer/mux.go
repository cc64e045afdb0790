package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/coreos/go-systemd/v22/daemon"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/spf13/cobra"
)

func init() {
	var (
		configPath, iface, addr, addr6, mode, metricsAddr string
		instances                                         []string
		bgpFlags                                          bgpFlags
		stateFile, pinDir                                 string
		drain                                             time.Duration
		health                                            muxd.HealthOptions
	)
	cmd := &cobra.Command{
		Use:   "mux",
		Short: "Run a mux: the XDP load balancer on an interface",
		Long: `Runs a mux. Either from a static configuration file (--config), or following
instances in the control store (--store, --instance, --iface): the mux reads the
latest blob and the deltas after it, then applies each new generation.`,
		Args: cobra.NoArgs,
	}
	storeURL := addStoreFlag(cmd)
	cmd.Flags().StringVar(&configPath, "config", "", "static configuration file (YAML)")
	cmd.Flags().StringVar(&iface, "iface", "", "interface to attach to (store mode)")
	cmd.Flags().StringVar(&addr, "addr", "", "mux address for outer headers (default: the interface's first IPv4)")
	cmd.Flags().StringVar(&addr6, "addr6", "", "mux IPv6 address: outer source of IPv6 instances and BGP next hop of IPv6 VIPs (default: the interface's first global IPv6)")
	cmd.Flags().StringVar(&mode, "xdp-mode", "driver", "XDP attach mode: driver or generic")
	cmd.Flags().StringVar(&metricsAddr, "metrics", "", "serve /metrics and /healthz on this address (e.g. 127.0.0.1:9100)")
	apiAddr := cmd.Flags().String("api", "", "serve the mux node API (the Prism keep-alive bits the controller collects: controller --prism-muxes) on this address, mutual TLS with --api-cert, --api-key, --api-ca")
	apiTLS := addAPITLSFlags(cmd) // node_tls.go
	cmd.Flags().StringSliceVar(&instances, "instance", nil, "instance to forward (store mode; repeatable)")
	var ctEntries int
	var maxNewConns uint64
	var awfdDrop float64
	cmd.Flags().IntVar(&ctEntries, "conntrack-entries", 1<<20, "connections the Maglev and AWFD strategies' connection table is sized for (a 4-entry, 64-byte bucket each)")
	cmd.Flags().Float64Var(&awfdDrop, "awfd-drop", 0, "AWFD: drop each new class record with this probability, as a lost update (experiments only)")
	cmd.Flags().Uint64Var(&maxNewConns, "max-new-conns", 0, "Maglev strategy: connection entries inserted per second at most, 0 = no cap (SYN-flood guard)")
	bgpFlags.register(cmd)
	cmd.Flags().StringVar(&stateFile, "state-file", "", "record of the sysctls the mux changed, restored on exit (default /run/beamer/mux-NETNS-IFACE.json)")
	cmd.Flags().StringVar(&pinDir, "pin-dir", "", `bpffs directory pinning the XDP program so it keeps forwarding if the mux dies, adopted by the next mux (default /sys/fs/bpf/beamer/mux-NETNS-IFACE; "-" = no pinning)`)
	cmd.Flags().DurationVar(&health.StoreDownAfter, "store-down-after", 30*time.Second, "store mode: /healthz reports degraded once the store has been unreachable this long (forwarding and BGP go on)")
	cmd.Flags().DurationVar(&health.WithdrawBehindAfter, "withdraw-behind-after", 30*time.Second, "store mode: withdraw an instance's VIPs from BGP once the store answers but the mux has not applied its latest generation for this long (negative: never)")
	cmd.Flags().DurationVar(&drain, "drain-delay", 2*time.Second, "on SIGTERM/SIGINT with --bgp-peer: time between withdrawing the routes and detaching, while routers move traffic away")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log := slog.Default() // --log-level, --log-format: logging.go
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()

		var static *config.Mux
		if ctEntries < 1 {
			return fmt.Errorf("--conntrack-entries %d: must be positive", ctEntries)
		}
		if awfdDrop < 0 || awfdDrop >= 1 {
			return fmt.Errorf("--awfd-drop %v: must be in [0, 1)", awfdDrop)
		}
		if drain < 0 {
			return fmt.Errorf("--drain-delay %v: must not be negative", drain)
		}
		hup := hangups()
		opts := muxd.Options{Interface: iface, Metrics: metricsAddr, ConnTrackEntries: ctEntries, MaxNewConnsPerSecond: maxNewConns, AWFDDrop: awfdDrop,
			StateFile: stateFile, PinDir: pinDir, Health: health, Log: log, API: *apiAddr, APIInsecure: insecureStore}
		var err error
		if opts.APITLS, err = serverTLS(apiTLS, nodeauth.RoleMux); err != nil {
			return err
		}
		if health.StoreDownAfter <= 0 {
			return fmt.Errorf("--store-down-after %v: must be positive", health.StoreDownAfter)
		}
		if configPath != "" {
			if len(instances) > 0 || cmd.Flags().Changed("store") {
				return errors.New("--config runs a static mux: it takes no --store or --instance")
			}
			c, err := config.LoadMux(configPath)
			if err != nil {
				return err
			}
			static = c
			opts.Interface, opts.Address, opts.Address6 = c.Interface, c.Address, c.Address6
			if c.XDPMode != "" {
				mode = c.XDPMode
			}
			if c.Metrics != "" && metricsAddr == "" {
				opts.Metrics = c.Metrics
			}
		} else if opts.Interface == "" || len(instances) == 0 {
			return errors.New("give --config FILE, or --iface IF and --instance NAME (with --store)")
		} else if err := checkInstanceNames(instances); err != nil {
			return err
		} else if err := checkStore(*storeURL); err != nil {
			return err // before attaching anything
		}
		if a, err := parseAddrFlag("addr", addr); err != nil {
			return err
		} else if a.IsValid() {
			opts.Address = a
		}
		if a, err := parseAddrFlag("addr6", addr6); err != nil {
			return err
		} else if a.IsValid() {
			if !a.Is6() || a.Is4In6() {
				return fmt.Errorf("--addr6 %v: not an IPv6 address", a)
			}
			opts.Address6 = a
		}
		switch mode {
		case "driver":
			opts.XDPMode = dataplane.XDPDriver
		case "generic":
			opts.XDPMode = dataplane.XDPGeneric
		default:
			return fmt.Errorf("--xdp-mode %q: must be driver or generic", mode)
		}

		bgpOpts, err := bgpFlags.options(log)
		if err != nil {
			return err
		}
		ctx, upgrading := upgradeContext(ctx)
		warnIfPinsDie(log, "mux", opts.PinDir) // pinscope.go
		d, err := muxd.Start(opts)
		if err != nil {
			return err
		}
		defer func() {
			if upgrading() {
				log.Info("mux exiting for an upgrade: its program stays pinned and forwarding for the next mux")
				if err := d.Abandon(); err != nil {
					log.Warn("mux: releasing", "error", err)
				}
				return
			}
			if err := d.Close(); err != nil {
				log.Warn("mux: detaching and restoring", "error", err)
			}
		}()
		if static != nil {
			for _, in := range static.Instances {
				if err := d.SetInstance(in.Instance, in.Table()); err != nil {
					return fmt.Errorf("instance %q: %w", in.Name, err)
				}
			}
		} else {
			st, target, err := openStore(ctx, *storeURL)
			if err != nil {
				return err
			}
			defer st.Close()
			// A predecessor's pinned program keeps forwarding until
			// every one of these is loaded.
			d.Expect(instances...)
			for _, name := range instances {
				if err := d.Follow(ctx, st, target.Root, name, log); err != nil {
					return err
				}
			}
		}
		// Replace a dead predecessor's pinned program, if any, with this
		// one once the tables are loaded (at once for a static mux).
		if err := d.Ready(); err != nil {
			return err
		}
		log.Info("mux forwarding", "interface", opts.Interface, "address", d.Address(), "address6", d.Address6(), "pinned", opts.PinDir != "-")
		notifySystemd(log, daemon.SdNotifyReady)
		defer notifySystemd(log, daemon.SdNotifyStopping)
		if static != nil {
			go reloadMux(ctx, hup, configPath, d, static, log) // reload.go
		} else {
			go ignoreHangups(ctx, hup, log)
		}
		if bgpOpts != nil {
			// Announce only now that the instances are loaded.
			bgpOpts.NextHop, bgpOpts.NextHop6 = d.Address(), d.Address6()
			a, err := muxd.StartBGP(ctx, *bgpOpts)
			if err != nil {
				return err
			}
			go d.AnnounceWhileHealthy(ctx, a, time.Second, log)
			<-ctx.Done()
			a.Close()
			if upgrading() {
				return nil // the pinned program keeps forwarding: nothing to drain
			}
			// Graceful stop: withdraw, let routers move the traffic to
			// other muxes while this one still forwards, then detach.
			log.Info("mux stopping: routes withdrawn, draining", "delay", drain)
			time.Sleep(drain)
			return nil
		}
		<-ctx.Done()
		log.Info("mux stopping")
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// checkInstanceNames refuses a --instance list naming an instance twice
// (two followers would apply every generation to one table) or a name no
// instance can have.
func checkInstanceNames(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if err := forwarding.CheckInstanceName(n); err != nil {
			return fmt.Errorf("--instance %q: %w", n, err)
		}
		if seen[n] {
			return fmt.Errorf("--instance %q: named twice (follow each instance once)", n)
		}
		seen[n] = true
	}
	return nil
}
