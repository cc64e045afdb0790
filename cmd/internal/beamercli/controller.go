package beamercli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
)

// controllerFlags are `beamer controller`'s flags.
type controllerFlags struct {
	storeURL, configPath, identity, metricsAddr *string
	noHealth                                    *bool
	health                                      controller.HealthOptions
	applyHolds, applyPrism                      func(*controller.RunOptions) error
	nodeFiles                                   *nodeauth.Files
	api                                         *controllerAPIFlags
	reconcile, defragPeriod, cheetahEvery       *time.Duration
	blobEvery                                   *uint32
	defrag                                      assign.DefragParams
}

// newControllerCommand is `beamer controller`.
func newControllerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Beamer controller: serves `beamer ctl`, health-checks DIPs, writes the mux ring",
		Long: `Runs a controller. Several may run against one store: one is elected and
writes, the others wait to take over. With the default embed:// store this
process also serves the embedded etcd the muxes connect to. Every controller
serves the management API that beamer ctl calls (--api, gRPC with mutual
TLS, roles read and admin); a standby answers reads from the store and
forwards changes to the elected one.`,
		Args: cobra.NoArgs,
	}
	var f controllerFlags
	f.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return f.run(cmd) }
	return cmd
}

func (f *controllerFlags) register(cmd *cobra.Command) {
	f.storeURL = addStoreFlag(cmd)
	f.configPath = cmd.Flags().String("config", "", "configuration file: YAML, one key per flag of this command (examples/controller.yaml); flags and BEAMER_ variables win")
	host, _ := os.Hostname()
	f.identity = cmd.Flags().String("identity", fmt.Sprintf("%s/%d", host, os.Getpid()), "name shown as the elected controller")
	f.noHealth = cmd.Flags().Bool("no-health-checks", false, "do not probe DIPs")
	h := &f.health
	cmd.Flags().DurationVar(&h.Interval, "health-interval", 2*time.Second, "time between probes of a DIP")
	cmd.Flags().DurationVar(&h.Timeout, "health-timeout", time.Second, "timeout of one probe (each instance says what a probe is: ctl create --health)")
	cmd.Flags().IntVar(&h.Fall, "health-fall", 3, "consecutive failed probes that mark a DIP down")
	cmd.Flags().IntVar(&h.Rise, "health-rise", 2, "consecutive good probes that mark a DIP up again")
	cmd.Flags().DurationVar(&h.HalfLife, "flap-half-life", 5*time.Minute, "half-life of the flap penalty")
	f.applyHolds = addHoldFlags(cmd)
	f.applyPrism = addPrismFlags(cmd)
	f.nodeFiles = addNodeClientFlags(cmd) // node_tls.go
	f.api = addControllerAPIFlags(cmd)    // controller_api.go
	f.metricsAddr = cmd.Flags().String("metrics", "", "serve /metrics (fail-open instances, servers by health, buckets held open) on this address")
	f.reconcile = cmd.Flags().Duration("reconcile-every", 30*time.Second, "reconcile all instances this often (ends chaining windows of removed DIPs)")
	f.blobEvery = cmd.Flags().Uint32("blob-every", 64, "write a full blob at least every N generations")
	f.defrag = assign.DefaultDefragParams
	d := &f.defrag
	cmd.Flags().Float64Var(&d.Threshold, "defrag-threshold", d.Threshold, "defragment beamer instances whose fragmentation (range rules per DIP) is above this")
	cmd.Flags().Float64Var(&d.TargetRate, "defrag-target-rate", d.TargetRate, "automatic defragmentation stops at this fragmentation, ≥ 1")
	cmd.Flags().IntVar(&d.MaxMoves, "defrag-max-moves", d.MaxMoves, "per defragmentation step, at most this many buckets leave any DIP")
	cmd.Flags().BoolVar(&d.AllowRise, "defrag-allow-rise", d.AllowRise, "let fragmentation rise during a run (the paper's algorithm: reaches the target from any table); without it a run never needs more range rules than it started with")
	f.defragPeriod = cmd.Flags().Duration("defrag-period", forwarding.DefaultChainWindow, "one automatic defragmentation step per instance this often (paper: the 4-minute chaining window); 0 turns it off")
	f.cheetahEvery = cmd.Flags().Duration("cheetah-push-every", 2*time.Second, "push Cheetah keys to the agents (PUT /v1/cheetah) and collect their loads for p2c this often; 0: agents have keys by hand (agent --cheetah-keys-file), servers are not held until their agent confirms them")
}

// options reads --config and checks every flag before the store is opened
// (or started): the controller's options, less what needs the store.
func (f *controllerFlags) options(cmd *cobra.Command, logger *slog.Logger) (controller.RunOptions, error) {
	if *f.configPath != "" {
		if err := applyFlagFile(cmd, *f.configPath); err != nil { // controller_config.go
			return controller.RunOptions{}, err
		}
	}
	o := controller.RunOptions{Options: controller.Options{Logger: logger}, Identity: *f.identity, ReconcileEvery: *f.reconcile}
	h := f.health
	if *f.cheetahEvery < 0 {
		return o, fmt.Errorf("--cheetah-push-every %v is negative", *f.cheetahEvery)
	}
	if h.Interval <= 0 || h.Timeout <= 0 || h.Fall < 1 || h.Rise < 1 || h.HalfLife <= 0 || *f.reconcile <= 0 || *f.blobEvery == 0 {
		return o, fmt.Errorf("health intervals, timeouts, thresholds, --reconcile-every and --blob-every must be positive")
	}
	if *f.defragPeriod < 0 {
		return o, fmt.Errorf("--defrag-period %v is negative", *f.defragPeriod)
	}
	if err := f.defrag.Validate(); err != nil {
		return o, fmt.Errorf("--defrag-*: %w", err)
	}
	if err := f.applyHolds(&o); err != nil {
		return o, err
	}
	if err := f.applyPrism(&o); err != nil {
		return o, err
	}
	o.Ring.BlobEvery = *f.blobEvery
	if !*f.noHealth {
		o.Health = &f.health
	}
	if *f.defragPeriod > 0 {
		o.Defrag, o.DefragEvery = &controller.AutoDefrag{Params: f.defrag}, *f.defragPeriod
	}
	if *f.cheetahEvery > 0 {
		if o.Strategies == nil {
			o.Strategies = map[forwarding.Strategy]any{}
		}
		o.Strategies[forwarding.StrategyCheetah] = &cheetah.ControllerOptions{Every: *f.cheetahEvery}
	}
	return o, useNodeClients(&o, f.nodeFiles)
}

// run opens (or starts) the store, serves the metrics and the API, and
// campaigns until a signal ends it.
func (f *controllerFlags) run(cmd *cobra.Command) error {
	logger := slog.Default().With("component", "controller")
	o, err := f.options(cmd, logger)
	if err != nil {
		return err
	}
	apiTLS, forwardTLS, err := f.api.tls()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	embedWait = 0 // the controller serves an embedded store itself
	st, target, err := openStore(ctx, *f.storeURL)
	if err != nil {
		return err
	}
	defer st.Close()
	stopMetrics, err := serveControllerMetrics(*f.metricsAddr, &o)
	if err != nil {
		return err
	}
	defer stopMetrics()
	stopAPI, err := serveControllerAPI(ctx, f.api, st, target.Root, o.Identity, apiTLS, forwardTLS)
	if err != nil {
		return err
	}
	defer stopAPI()
	logger.Info("campaigning", "store", *f.storeURL, "root", target.Root, "identity", o.Identity)
	// Serving: the store is open (or started), the metrics and the API listen;
	// whether this controller leads is the election's business.
	notifySystemd(logger, daemon.SdNotifyReady)
	defer notifySystemd(logger, daemon.SdNotifyStopping)
	controller.Run(ctx, st, target.Root, o)
	return nil
}
