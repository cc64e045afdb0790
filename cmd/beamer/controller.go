package main

import (
	"context"
	"fmt"
	"github.com/coreos/go-systemd/v22/daemon"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// newControllerCommand is `beamer controller`.
func newControllerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Beamer controller: serves `beamer ctl`, health-checks DIPs, writes the mux ring",
		Long: `Runs a controller. Several may run against one store: one is elected and
writes, the others wait to take over. With the default embed:// store this
process also serves the embedded etcd the muxes connect to. Every controller
serves the management API that beamer ctl calls (--api, gRPC with mutual
TLS, roles read and admin); a standby forwards calls to the elected one.`,
		Args: cobra.NoArgs,
	}
	storeURL := addStoreFlag(cmd)
	configPath := cmd.Flags().String("config", "", "configuration file: YAML, one key per flag of this command (examples/controller.yaml); flags and BEAMER_ variables win")
	host, _ := os.Hostname()
	identity := cmd.Flags().String("identity", fmt.Sprintf("%s/%d", host, os.Getpid()), "name shown as the elected controller")
	noHealth := cmd.Flags().Bool("no-health-checks", false, "do not probe DIPs")
	var h controller.HealthOptions
	cmd.Flags().DurationVar(&h.Interval, "health-interval", 2*time.Second, "time between probes of a DIP")
	cmd.Flags().DurationVar(&h.Timeout, "health-timeout", time.Second, "timeout of one probe (each instance says what a probe is: ctl create --health)")
	cmd.Flags().IntVar(&h.Fall, "health-fall", 3, "consecutive failed probes that mark a DIP down")
	cmd.Flags().IntVar(&h.Rise, "health-rise", 2, "consecutive good probes that mark a DIP up again")
	cmd.Flags().DurationVar(&h.HalfLife, "flap-half-life", 5*time.Minute, "half-life of the flap penalty")
	applyHolds := addHoldFlags(cmd)
	applyPrism := addPrismFlags(cmd)
	nodeFiles := addNodeClientFlags(cmd)   // node_tls.go
	apiFlags := addControllerAPIFlags(cmd) // controller_api.go
	metricsAddr := cmd.Flags().String("metrics", "", "serve /metrics (fail-open instances, servers by health, buckets held open) on this address")
	reconcile := cmd.Flags().Duration("reconcile-every", 30*time.Second, "reconcile all instances this often (ends chaining windows of removed DIPs)")
	blobEvery := cmd.Flags().Uint32("blob-every", 64, "write a full blob at least every N generations")
	defrag := assign.DefaultDefragParams
	cmd.Flags().Float64Var(&defrag.Threshold, "defrag-threshold", defrag.Threshold, "defragment beamer instances whose fragmentation (range rules per DIP) is above this")
	cmd.Flags().Float64Var(&defrag.TargetRate, "defrag-target-rate", defrag.TargetRate, "automatic defragmentation stops at this fragmentation, ≥ 1")
	cmd.Flags().IntVar(&defrag.MaxMoves, "defrag-max-moves", defrag.MaxMoves, "per defragmentation step, at most this many buckets leave any DIP")
	cmd.Flags().BoolVar(&defrag.AllowRise, "defrag-allow-rise", defrag.AllowRise, "let fragmentation rise during a run (the paper's algorithm: reaches the target from any table); without it a run never needs more range rules than it started with")
	defragPeriod := cmd.Flags().Duration("defrag-period", forwarding.DefaultChainWindow, "one automatic defragmentation step per instance this often (paper: the 4-minute chaining window); 0 turns it off")
	cheetahEvery := cmd.Flags().Duration("cheetah-push-every", 2*time.Second, "push Cheetah keys to the agents (PUT /v1/cheetah) and collect their loads for p2c this often; 0: agents have keys by hand (agent --cheetah-keys-file), servers are not held until their agent confirms them")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *configPath != "" {
			if err := applyFlagFile(cmd, *configPath); err != nil { // controller_config.go
				return err
			}
		}
		if *cheetahEvery < 0 {
			return fmt.Errorf("--cheetah-push-every %v is negative", *cheetahEvery)
		}
		if h.Interval <= 0 || h.Timeout <= 0 || h.Fall < 1 || h.Rise < 1 || h.HalfLife <= 0 || *reconcile <= 0 || *blobEvery == 0 {
			return fmt.Errorf("health intervals, timeouts, thresholds, --reconcile-every and --blob-every must be positive")
		}
		if *defragPeriod < 0 {
			return fmt.Errorf("--defrag-period %v is negative", *defragPeriod)
		}
		if err := defrag.Validate(); err != nil {
			return fmt.Errorf("--defrag-*: %w", err)
		}
		logger := slog.Default().With("component", "controller")
		o := controller.RunOptions{Options: controller.Options{Logger: logger}, Identity: *identity, ReconcileEvery: *reconcile}
		// Options are checked before the store is opened (or started).
		if err := applyHolds(&o); err != nil {
			return err
		}
		if err := applyPrism(&o); err != nil {
			return err
		}
		apiTLS, forwardTLS, err := apiFlags.tls()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		embedWait = 0 // the controller serves an embedded store itself
		st, target, err := openStore(ctx, *storeURL)
		if err != nil {
			return err
		}
		defer st.Close()
		o.Ring.BlobEvery = *blobEvery
		if !*noHealth {
			o.Health = &h
		}
		if *defragPeriod > 0 {
			o.Defrag, o.DefragEvery = &controller.AutoDefrag{Params: defrag}, *defragPeriod
		}
		if *cheetahEvery > 0 {
			o.Cheetah = &controller.CheetahOptions{Every: *cheetahEvery}
		}
		if err := useNodeClients(&o, nodeFiles); err != nil {
			return err
		}
		stopMetrics, err := serveControllerMetrics(*metricsAddr, &o)
		if err != nil {
			return err
		}
		defer stopMetrics()
		stopAPI, err := serveControllerAPI(ctx, apiFlags, st, target.Root, *identity, apiTLS, forwardTLS)
		if err != nil {
			return err
		}
		defer stopAPI()
		logger.Info("campaigning", "store", *storeURL, "root", target.Root, "identity", *identity)
		// Serving: the store is open (or started), the metrics and the API listen;
		// whether this controller leads is the election's business.
		notifySystemd(logger, daemon.SdNotifyReady)
		defer notifySystemd(logger, daemon.SdNotifyStopping)
		controller.Run(ctx, st, target.Root, o)
		return nil
	}
	return cmd
}
