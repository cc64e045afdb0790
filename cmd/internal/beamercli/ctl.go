package beamercli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// newCtlCommand groups the operator commands. Every one calls the elected
// controller's management API (ctl_api.go); show/list/lookup only read.
func newCtlCommand() *cobra.Command {
	ctl := &cobra.Command{
		Use:   "ctl",
		Short: "Operate load-balancer instances through the elected controller",
	}
	addCtlCreate(ctl)
	addCtlDelete(ctl)
	addCtlAddDIP(ctl)
	addCtlRemoveDIP(ctl)
	addCtlByID(ctl, "set-weight NAME ID WEIGHT", "Change a DIP's weight and rebalance", controller.OpSetWeight, true)
	addCtlByID(ctl, "drain NAME ID", "Move a DIP's buckets away (its connections finish by daisy chaining), keeping it configured", controller.OpDrain, false)
	addCtlByID(ctl, "undrain NAME ID", "Give a drained DIP its share of buckets again", controller.OpUndrain, false)
	addCtlDefrag(ctl)
	ctl.AddCommand(newCtlHealthCommand())
	addCtlRead(ctl)                        // show, list: ctl_read.go
	addCtlLookup(ctl)                      // ctl_lookup.go
	addCtlWatch(ctl)                       // ctl_watch.go
	addCtlDeclarative(ctl)                 // export, diff, apply: ctl_declarative.go
	ctl.AddCommand(newCtlCheetahCommand()) // ctl_cheetah.go
	return ctl
}

// ctlFlags are the flags every ctl subcommand has.
type ctlFlags struct {
	api     *apiClientFlags
	timeout *time.Duration
}

// newCtl makes a ctl command under parent with the flags every one has.
func newCtl(parent *cobra.Command, use, short string, args cobra.PositionalArgs) (*cobra.Command, *ctlFlags) {
	cmd := &cobra.Command{Use: use, Short: short, Args: args, ValidArgsFunction: completeInstance}
	f := &ctlFlags{api: addAPIClientFlags(cmd)}
	f.timeout = cmd.Flags().Duration("timeout", 30*time.Second, "how long to wait for the controller")
	parent.AddCommand(cmd)
	return cmd, f
}

// submit sends one request and waits for the controller's answer.
func (f *ctlFlags) submit(r controller.Request) error {
	_, err := f.submitResult(r)
	return err
}

// submitResult is submit returning what the controller reported.
func (f *ctlFlags) submitResult(r controller.Request) (string, error) {
	var res string
	// The server waits --timeout for the controller's verdict; the call
	// gets a few seconds more to bring it back.
	err := f.api.withClient(*f.timeout+2*time.Second, func(ctx context.Context, c *mgmtapi.Client) error {
		var err error
		res, err = c.Submit(ctx, r)
		return err
	})
	return res, err
}

func parseID(s string) (forwarding.ServerID, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < uint64(forwarding.MinServerID) || n > uint64(forwarding.MaxServerID) {
		return 0, fmt.Errorf("server id %q must be a number in %d–%d", s, forwarding.MinServerID, forwarding.MaxServerID)
	}
	return forwarding.ServerID(n), nil
}

func parseWeight(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("weight %q must be a number in 1–%d", s, controller.MaxWeight)
	}
	return uint32(n), forwarding.CheckWeight(uint32(n))
}

func parsePorts(s string) (lo, hi uint16, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	x, err1 := strconv.ParseUint(a, 10, 16)
	y, err2 := strconv.ParseUint(b, 10, 16)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("ports %q must be PORT or LOW-HIGH", s)
	}
	return uint16(x), uint16(y), nil
}

// createFlags are `ctl create`'s flags.
type createFlags struct {
	vips                                    *[]string
	ports, strategy, healthKind, healthPath *string
	buckets                                 *uint32
	window                                  *time.Duration
	maxChain                                *int
	healthPort, agentPort                   *uint16
	strategyFlags                           map[forwarding.Strategy]strategyFlags // ctl_strategy.go
	portOpts                                *portFlags
	encapOpts                               *encapFlags
}

func addCtlCreate(ctl *cobra.Command) {
	create, cf := newCtl(ctl, "create NAME --vip ADDR[,ADDR] --ports P[-Q] --buckets B", "Create an instance", cobra.ExactArgs(1))
	f := registerCreateFlags(create)
	create.RunE = func(cmd *cobra.Command, args []string) error {
		in, err := f.instance(cmd, args[0])
		if err != nil {
			return err
		}
		if err := cf.submit(controller.Request{Op: controller.OpCreateInstance, Instance: in.Name, Config: in}); err != nil {
			return err
		}
		h := in.HealthProbe()
		fmt.Printf("instance %s created (%s, %d buckets, health probe %s port %d)\n", in.Name, in.Strategy, in.Buckets, h.Kind, h.Port)
		return nil
	}
}

func registerCreateFlags(create *cobra.Command) *createFlags {
	f := &createFlags{}
	f.vips = create.Flags().StringSlice("vip", nil, "virtual IP address(es): all IPv4, or all IPv6 (one family per instance)")
	f.ports = create.Flags().String("ports", "", "TCP service port or range on every VIP (any port outside the server-id range; optional with --tcp-ports/--udp-ports)")
	f.buckets = create.Flags().Uint32("buckets", 0, fmt.Sprintf("beamer (required): bucket count B, larger than the most DIPs the instance will have (paper: 100 per DIP); maglev: the lookup table size M, a prime ≥ 100 per backend, %d when not given", assign.MaglevSmallTable))
	f.window = create.Flags().Duration("chain-window", forwarding.DefaultChainWindow, fmt.Sprintf("daisy-chaining window, at most %v (agents of beamer and cheetah instances are given the same: --vip VIP:BUCKETS:WINDOW)", forwarding.MaxChainWindow))
	f.maxChain = create.Flags().Int("max-chain", forwarding.DefaultMaxChainLen, fmt.Sprintf("K: previous owners a bucket's history keeps, 1–%d (a connection survives K moves of its bucket inside the window)", forwarding.MaxChain))
	f.strategyFlags = addStrategyFlags(create)
	f.strategy = create.Flags().String("strategy", string(forwarding.StrategyBeamer), "forwarding strategy: "+forwarding.StrategyNames()+" (beamer: stable hashing, daisy chaining; maglev: Maglev hashing, connection tables in the muxes)")
	f.healthKind = create.Flags().String("health", string(forwarding.HealthAgent), "how the controller probes servers: agent (the server's agent connects to VIP:port on the server; works for services bound only to the VIP), tcp (connect to DIP:port), http (GET http://DIP:port/PATH, 2xx), none")
	f.healthPort = create.Flags().Uint16("health-port", 0, "port probed (default: the first service port)")
	f.healthPath = create.Flags().String("health-path", "", "path of the http probe (default /)")
	f.agentPort = create.Flags().Uint16("agent-port", 0, "port of the agent API on the servers (default 9300)")
	f.portOpts = addPortFlags(create)
	f.encapOpts = addEncapFlags(create) // ctl_encap.go
	return f
}

// instance is the instance the flags describe, checked as the controller
// will check it.
func (f *createFlags) instance(cmd *cobra.Command, name string) (*forwarding.Instance, error) {
	in := &forwarding.Instance{Name: name, Strategy: forwarding.Strategy(*f.strategy), Buckets: *f.buckets, ChainWindow: *f.window, MaxChainLen: *f.maxChain}
	if err := applyStrategyFlags(cmd, in, f.strategyFlags); err != nil {
		return nil, err
	}
	if !cmd.Flags().Changed("buckets") {
		// A Maglev lookup table has a size to assume; B has none.
		if !in.Strategy.Spec().MaglevTable {
			return nil, errMissingBuckets
		}
		in.Buckets = assign.MaglevSmallTable
	}
	for _, v := range *f.vips {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("--vip %q: %w", v, err)
		}
		in.VIPs = append(in.VIPs, a)
	}
	if *f.ports != "" {
		var err error
		if in.PortLow, in.PortHigh, err = parsePorts(*f.ports); err != nil {
			return nil, err
		}
	}
	if err := f.portOpts.apply(cmd, in); err != nil {
		return nil, err
	}
	if err := f.encapOpts.apply(cmd, in); err != nil {
		return nil, err
	}
	if cmd.Flags().Changed("health") || *f.healthPort != 0 || *f.healthPath != "" || *f.agentPort != 0 {
		in.Health = &forwarding.HealthCheck{Kind: forwarding.HealthKind(*f.healthKind), Port: *f.healthPort, Path: *f.healthPath, AgentPort: *f.agentPort}
	}
	if err := controller.CheckInstance(in); err != nil {
		return nil, err
	}
	return in, nil
}

func addCtlDelete(ctl *cobra.Command) {
	del, df := newCtl(ctl, "delete NAME", "Delete an instance and all its state", cobra.ExactArgs(1))
	del.RunE = func(_ *cobra.Command, args []string) error {
		if err := df.submit(controller.Request{Op: controller.OpDeleteInstance, Instance: args[0]}); err != nil {
			return err
		}
		fmt.Printf("instance %s deleted\n", args[0])
		return nil
	}
}

func addCtlAddDIP(ctl *cobra.Command) {
	add, af := newCtl(ctl, "add-dip NAME ID ADDR [WEIGHT] | add-dip NAME ID ADDR ID ADDR… [--weight W]",
		"Add DIPs (server id 1025–65535, address of the instance's family, weight default 1); several at once get one rebalance", cobra.MinimumNArgs(3))
	addWeight := add.Flags().String("weight", "1", "weight of every DIP of a several-DIP add")
	add.Long = `Adds one DIP, or several in one request: all are recorded at once and one
rebalance gives them their shares (adding them one request after the other
would move some buckets twice). With health checks running, new DIPs own no
bucket until their first successful probe ("pending" in ctl show).`
	add.RunE = func(cmd *cobra.Command, args []string) error {
		dips, err := parseAddDIPs(args[1:], *addWeight, cmd.Flags().Changed("weight"))
		if err != nil {
			return err
		}
		r := controller.Request{Op: controller.OpAddDIP, Instance: args[0]}
		if len(dips) == 1 {
			r.ID, r.Addr, r.Weight = dips[0].ID, dips[0].Addr, dips[0].Weight
		} else {
			r.DIPs = dips
		}
		if err := af.submit(r); err != nil {
			return err
		}
		for _, d := range dips {
			fmt.Printf("instance %s: added DIP %d (%v, weight %d)\n", args[0], d.ID, d.Addr, d.Weight)
		}
		return nil
	}
}

// addCtlByID adds a command on one DIP of an instance (NAME ID, with
// withWeight NAME ID WEIGHT) that submits op.
func addCtlByID(ctl *cobra.Command, use, short, op string, withWeight bool) {
	nargs := 2
	if withWeight {
		nargs = 3
	}
	cmd, f := newCtl(ctl, use, short, cobra.ExactArgs(nargs))
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		id, err := parseID(args[1])
		if err != nil {
			return err
		}
		r := controller.Request{Op: op, Instance: args[0], ID: id}
		if withWeight {
			if r.Weight, err = parseWeight(args[2]); err != nil {
				return err
			}
		}
		if err := f.submit(r); err != nil {
			return err
		}
		fmt.Printf("instance %s: %s %d done\n", args[0], strings.Fields(use)[0], id)
		return nil
	}
}

func addCtlRemoveDIP(ctl *cobra.Command) {
	rm, rmf := newCtl(ctl, "remove-dip NAME ID [ID…]", "Remove DIPs: weight 0, one rebalance with daisy chaining, then remove (remove several at once, or a bucket may move twice within its chaining window)", cobra.MinimumNArgs(2))
	rm.RunE = func(_ *cobra.Command, args []string) error {
		r := controller.Request{Op: controller.OpRemoveDIP, Instance: args[0]}
		for _, a := range args[1:] {
			id, err := parseID(a)
			if err != nil {
				return err
			}
			r.IDs = append(r.IDs, id)
		}
		ids := r.IDs
		if len(r.IDs) == 1 {
			r.ID, r.IDs = r.IDs[0], nil
		}
		if err := rmf.submit(r); err != nil {
			return err
		}
		fmt.Printf("instance %s: removed DIPs %v (their connections are daisy-chained to them while they last)\n", args[0], ids)
		return nil
	}
}

func addCtlDefrag(ctl *cobra.Command) {
	defrag, dff := newCtl(ctl, "defrag NAME [--steps N] [--target-rate F] [--max-moves N] [--allow-rise]",
		"Run defragmentation steps now (beamer instances): each step is a generation moving at most --max-moves buckets per DIP, with daisy chaining", cobra.ExactArgs(1))
	steps := defrag.Flags().Int("steps", 1, fmt.Sprintf("steps to run now, 1–%d; each moves only buckets outside their chaining window", controller.MaxDefragSteps))
	target := defrag.Flags().Float64("target-rate", assign.DefaultDefragParams.TargetRate, "stop once fragmentation (range rules per DIP) is at most this, ≥ 1")
	maxMoves := defrag.Flags().Int("max-moves", assign.DefaultDefragParams.MaxMoves, "per step, at most this many buckets leave any DIP (and as many arrive)")
	allowRise := defrag.Flags().Bool("allow-rise", false, "let fragmentation rise during the run, as the paper's algorithm does, so it reaches the target from any table (software muxes have no rule budget); without it a run never needs more rules than it started with and may stop short")
	defrag.RunE = func(_ *cobra.Command, args []string) error {
		p := assign.DefragParams{Threshold: *target, TargetRate: *target, MaxMoves: *maxMoves, AllowRise: *allowRise}
		if err := p.Validate(); err != nil {
			return err
		}
		if *steps < 1 || *steps > controller.MaxDefragSteps {
			return fmt.Errorf("--steps %d must be in 1–%d", *steps, controller.MaxDefragSteps)
		}
		res, err := dff.submitResult(controller.Request{Op: controller.OpDefrag, Instance: args[0], Steps: *steps, Defrag: &p})
		if err != nil {
			return err
		}
		fmt.Println(res)
		return nil
	}
}

// newCtlHealthCommand is `ctl health` and its `clear`.
func newCtlHealthCommand() *cobra.Command {
	healthCmd := &cobra.Command{Use: "health", Short: "Health checks of DIPs"}
	clear, clf := newCtl(healthCmd, "clear NAME ID", "Clear a DIP's flap damping (penalty and suppression): it comes up at its next good probes", cobra.ExactArgs(2))
	clear.RunE = func(_ *cobra.Command, args []string) error {
		id, err := parseID(args[1])
		if err != nil {
			return err
		}
		if err := clf.submit(controller.Request{Op: controller.OpHealthClear, Instance: args[0], ID: id}); err != nil {
			return err
		}
		fmt.Printf("instance %s: flap damping of DIP %d cleared\n", args[0], id)
		return nil
	}
	return healthCmd
}

func printView(out io.Writer, v *controller.View) {
	in := v.Instance
	vips := make([]string, len(in.VIPs))
	for i, a := range in.VIPs {
		vips[i] = a.String()
	}
	fmt.Fprintf(out, "instance %s (%s): VIPs %s ports %d-%d, %d buckets, chaining window %s, max chain %d%s\n",
		in.Name, in.Strategy, strings.Join(vips, ","), in.PortLow, in.PortHigh, in.Buckets, formatSeconds(in.ChainWindow), in.ChainLen(), encapSummary(&in))
	fmt.Fprintf(out, "generation %d (blob at %d + %d deltas, %d+%d stored bytes)\n",
		v.Generation, v.Load.Blob, v.Load.Deltas, v.Load.BlobBytes, v.Load.DeltaBytes)
	unit, chained := v.Unit, ""
	if v.Histories {
		chained = "\tCHAINED"
	}
	for _, line := range v.Details {
		fmt.Fprintln(out, line)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tADDRESS\tSTATE\tHEALTH\tWEIGHT\tEFFECTIVE\t%s\tLOAD%%\tWEIGHT%%%s\n", unit, chained)
	for _, d := range v.DIPs {
		state := string(d.State)
		if d.Drained {
			state += ",drained"
		}
		health := d.Health
		if health != "up" && !d.HealthChanged.IsZero() {
			health += " since " + d.HealthChanged.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%d\t%v\t%s\t%s\t%d\t%d\t%d\t%.3f\t%.3f", d.ID, d.Addr, state, health, d.Weight, d.Effective,
			d.Buckets, 100*d.LoadShare, 100*d.WeightShare)
		if chained != "" {
			fmt.Fprintf(w, "\t%d", d.Chained)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	printHealthDetails(out, v)
	if len(v.Retired) > 0 {
		fmt.Fprintf(out, "retired server ids (still daisy-chained to): %v\n", v.Retired)
	}
	printHistoryEvictions(out, v)
	for _, warning := range v.Warnings {
		fmt.Fprintf(out, "WARNING: %s\n", warning)
	}
}

// printHistoryEvictions prints the K limit's totals per server: servers
// pushed out of bucket histories while they held connections there.
func printHistoryEvictions(out io.Writer, v *controller.View) {
	e := v.HistoryEvictions
	if e == nil || len(e.Servers) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(e.Servers))
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		t := e.Servers[id]
		parts = append(parts, fmt.Sprintf("server %d: %d buckets, %d connections", id, t.Buckets, t.Connections))
	}
	fmt.Fprintf(out, "pushed out of bucket histories by max_chain %d while holding connections (since the instance was created): %s\n", e.K, strings.Join(parts, "; "))
}
