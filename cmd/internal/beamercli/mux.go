package beamercli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
)

// muxFlags are `beamer mux`'s flags.
type muxFlags struct {
	configPath, iface, addr, addr6, mode, metricsAddr string
	instances                                         []string
	bgp                                               bgpFlags
	stateFile, pinDir                                 string
	drain                                             time.Duration
	health                                            muxd.HealthOptions
	storeURL, apiAddr                                 *string
	apiTLS                                            *nodeauth.Files
	ctEntries                                         int
	maxNewConns                                       uint64
	hooks                                             MuxHooks
}

// MuxHooks let another command run the product's mux with an experiment's
// fault around it (beamer-lab mux): the fault's flags and its wrapper of the
// control store live in the research wing, never in this binary.
type MuxHooks struct {
	// Flags adds the experiment's flags to the command.
	Flags func(cmd *cobra.Command)
	// Check refuses bad values of those flags before anything is attached.
	Check func() error
	// WrapStore is given the store the mux follows and returns the one it
	// follows instead (store mode only).
	WrapStore func(st store.Store, log *slog.Logger) (store.Store, error)
}

// newMuxCommand is `beamer mux` with its status, inspect and capture.
func newMuxCommand() *cobra.Command { return NewMuxCommand(MuxHooks{}) }

// NewMuxCommand is `beamer mux` with an experiment's hooks: beamer-lab's mux.
func NewMuxCommand(h MuxHooks) *cobra.Command {
	f := muxFlags{hooks: h}
	cmd := &cobra.Command{
		Use:   "mux",
		Short: "Run a mux: the XDP load balancer on an interface",
		Long: `Runs a mux. Either from a static configuration file (--config), or following
instances in the control store (--store, --instance, --iface): the mux reads the
latest blob and the deltas after it, then applies each new generation.`,
		Args: cobra.NoArgs,
	}
	f.register(cmd)
	if h.Flags != nil {
		h.Flags(cmd)
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return f.run(cmd) }
	cmd.AddCommand(newMuxStatusCommand(), newMuxInspectCommand(), newCaptureCommand("mux", dataplane.MuxCapturePoints))
	return cmd
}

func (f *muxFlags) register(cmd *cobra.Command) {
	f.storeURL = addStoreFlag(cmd)
	cmd.Flags().StringVar(&f.configPath, "config", "", "static configuration file (YAML)")
	cmd.Flags().StringVar(&f.iface, "iface", "", "interface to attach to (store mode)")
	cmd.Flags().StringVar(&f.addr, "addr", "", "mux address for outer headers (default: the interface's first IPv4)")
	cmd.Flags().StringVar(&f.addr6, "addr6", "", "mux IPv6 address: outer source of IPv6 instances and BGP next hop of IPv6 VIPs (default: the interface's first global IPv6)")
	cmd.Flags().StringVar(&f.mode, "xdp-mode", "driver", "XDP attach mode: driver or generic")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics", "", "serve /metrics and /healthz on this address (e.g. 127.0.0.1:9100)")
	f.apiAddr = cmd.Flags().String("api", "", "serve the mux node API (the Prism keep-alive bits the controller collects: controller --prism-muxes) on this address, mutual TLS with --api-cert, --api-key, --api-ca")
	f.apiTLS = addAPITLSFlags(cmd) // node_tls.go
	cmd.Flags().StringSliceVar(&f.instances, "instance", nil, "instance to forward (store mode; repeatable)")
	cmd.Flags().IntVar(&f.ctEntries, "conntrack-entries", 1<<20, "connections the Maglev and AWFD strategies' connection table is sized for (a 4-entry, 64-byte bucket each)")
	cmd.Flags().Uint64Var(&f.maxNewConns, "max-new-conns", 0, "Maglev strategy: connection entries inserted per second at most, 0 = no cap (SYN-flood guard)")
	f.bgp.register(cmd)
	cmd.Flags().StringVar(&f.stateFile, "state-file", "", "record of the sysctls the mux changed, restored on exit (default /run/beamer/mux-NETNS-IFACE.json)")
	cmd.Flags().StringVar(&f.pinDir, "pin-dir", "", `bpffs directory pinning the XDP program so it keeps forwarding if the mux dies, adopted by the next mux (default /sys/fs/bpf/beamer/mux-NETNS-IFACE; "-" = no pinning)`)
	cmd.Flags().DurationVar(&f.health.StoreDownAfter, "store-down-after", 30*time.Second, "store mode: /healthz reports degraded once the store has been unreachable this long (forwarding and BGP go on)")
	cmd.Flags().DurationVar(&f.health.WithdrawBehindAfter, "withdraw-behind-after", 30*time.Second, "store mode: withdraw an instance's VIPs from BGP once the store answers but the mux has not applied its latest generation for this long (negative: never)")
	cmd.Flags().DurationVar(&f.drain, "drain-delay", 2*time.Second, "on SIGTERM/SIGINT with --bgp-peer: time between withdrawing the routes and detaching, while routers move traffic away")
}

// options checks the flags (and reads --config) before anything is
// attached: the daemon's options and, for a static mux, its file.
func (f *muxFlags) options(cmd *cobra.Command, log *slog.Logger) (muxd.Options, *config.Mux, error) {
	var static *config.Mux
	if f.hooks.Check != nil {
		if err := f.hooks.Check(); err != nil {
			return muxd.Options{}, nil, err
		}
	}
	if f.ctEntries < 1 {
		return muxd.Options{}, nil, fmt.Errorf("--conntrack-entries %d: must be positive", f.ctEntries)
	}
	if f.drain < 0 {
		return muxd.Options{}, nil, fmt.Errorf("--drain-delay %v: must not be negative", f.drain)
	}
	opts := muxd.Options{Interface: f.iface, Metrics: f.metricsAddr, ConnTrackEntries: f.ctEntries, MaxNewConnsPerSecond: f.maxNewConns,
		StateFile: f.stateFile, PinDir: f.pinDir, Health: f.health, Log: log, API: *f.apiAddr, APIInsecure: insecureStore}
	var err error
	if opts.APITLS, err = serverTLS(f.apiTLS, nodeauth.RoleMux); err != nil {
		return opts, nil, err
	}
	if f.health.StoreDownAfter <= 0 {
		return opts, nil, fmt.Errorf("--store-down-after %v: must be positive", f.health.StoreDownAfter)
	}
	mode := f.mode
	if f.configPath != "" {
		if len(f.instances) > 0 || cmd.Flags().Changed("store") {
			return opts, nil, errors.New("--config runs a static mux: it takes no --store or --instance")
		}
		c, err := config.LoadMux(f.configPath)
		if err != nil {
			return opts, nil, err
		}
		static = c
		opts.Interface, opts.Address, opts.Address6 = c.Interface, c.Address, c.Address6
		if c.XDPMode != "" {
			mode = c.XDPMode
		}
		if c.Metrics != "" && f.metricsAddr == "" {
			opts.Metrics = c.Metrics
		}
	} else if opts.Interface == "" || len(f.instances) == 0 {
		return opts, nil, errors.New("give --config FILE, or --iface IF and --instance NAME (with --store)")
	} else if err := checkInstanceNames(f.instances); err != nil {
		return opts, nil, err
	} else if err := checkStore(*f.storeURL); err != nil {
		return opts, nil, err // before attaching anything
	}
	if err := f.addresses(&opts); err != nil {
		return opts, nil, err
	}
	switch mode {
	case "driver":
		opts.XDPMode = dataplane.XDPDriver
	case "generic":
		opts.XDPMode = dataplane.XDPGeneric
	default:
		return opts, nil, fmt.Errorf("--xdp-mode %q: must be driver or generic", mode)
	}
	return opts, static, nil
}

// addresses sets --addr and --addr6, over the file's.
func (f *muxFlags) addresses(opts *muxd.Options) error {
	if a, err := parseAddrFlag("addr", f.addr); err != nil {
		return err
	} else if a.IsValid() {
		opts.Address = a
	}
	if a, err := parseAddrFlag("addr6", f.addr6); err != nil {
		return err
	} else if a.IsValid() {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("--addr6 %v: not an IPv6 address", a)
		}
		opts.Address6 = a
	}
	return nil
}

// run is the mux: attach, load the tables (from the file or the store),
// take over from a pinned predecessor, announce, forward until signalled.
func (f *muxFlags) run(cmd *cobra.Command) error {
	log := slog.Default() // --log-level, --log-format: logging.go
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := hangups()
	opts, static, err := f.options(cmd, log)
	if err != nil {
		return err
	}
	bgpOpts, err := f.bgp.options(log)
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
	closeStore, err := f.loadTables(ctx, d, static, log)
	if err != nil {
		return err
	}
	defer closeStore()
	// Replace a dead predecessor's pinned program, if any, with this
	// one once the tables are loaded (at once for a static mux).
	if err := d.Ready(); err != nil {
		return err
	}
	log.Info("mux forwarding", "interface", opts.Interface, "address", d.Address(), "address6", d.Address6(), "pinned", opts.PinDir != "-")
	notifySystemd(log, daemon.SdNotifyReady)
	defer notifySystemd(log, daemon.SdNotifyStopping)
	if static != nil {
		go reloadMux(ctx, hup, f.configPath, d, static, log) // reload.go
	} else {
		go ignoreHangups(ctx, hup, log)
	}
	return f.serve(ctx, d, bgpOpts, upgrading, log)
}

// loadTables loads a static mux's instances, or follows the store's; the
// returned function closes the store when the mux stops.
func (f *muxFlags) loadTables(ctx context.Context, d *muxd.Daemon, static *config.Mux, log *slog.Logger) (func(), error) {
	if static != nil {
		for _, in := range static.Instances {
			if err := d.SetInstance(in.Instance, in.Table()); err != nil {
				return nil, fmt.Errorf("instance %q: %w", in.Name, err)
			}
		}
		return func() {}, nil
	}
	st, target, err := openStore(ctx, *f.storeURL)
	if err != nil {
		return nil, err
	}
	if f.hooks.WrapStore != nil {
		wrapped, err := f.hooks.WrapStore(st, log)
		if err != nil {
			st.Close()
			return nil, err
		}
		st = wrapped
	}
	// A predecessor's pinned program keeps forwarding until
	// every one of these is loaded.
	d.Expect(f.instances...)
	for _, name := range f.instances {
		if err := d.Follow(ctx, st, target.Root, name, log); err != nil {
			st.Close()
			return nil, err
		}
	}
	return func() { st.Close() }, nil
}

// serve forwards until ctx ends; with BGP it announces the VIPs while the
// mux is healthy and, on a stop that is not an upgrade, withdraws them and
// drains for --drain-delay before the mux detaches.
func (f *muxFlags) serve(ctx context.Context, d *muxd.Daemon, bgpOpts *muxd.BGPOptions, upgrading func() bool, log *slog.Logger) error {
	if bgpOpts == nil {
		<-ctx.Done()
		log.Info("mux stopping")
		return nil
	}
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
	log.Info("mux stopping: routes withdrawn, draining", "delay", f.drain)
	time.Sleep(f.drain)
	return nil
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
