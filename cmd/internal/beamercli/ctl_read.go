package beamercli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/spf13/cobra"
)

// The read-only ctl commands (show, list, lookup) call the management
// API's read RPCs; the controller builds their documents from its store
// (listJSON, lookupJSON), ctl prints them.

// listView is `ctl list -o json|yaml`. Field names and units are a stable
// interface (docs/operations.md): add fields, never rename them.
type listView struct {
	// Controller is the elected controller's name, "" when none is elected.
	Controller string         `json:"controller"`
	Instances  []listInstance `json:"instances"`
}

type listInstance struct {
	Name               string       `json:"name"`
	Strategy           string       `json:"strategy"`
	VIPs               []string     `json:"vips"`
	PortLow            uint16       `json:"port_low"`
	PortHigh           uint16       `json:"port_high"`
	Ports              string       `json:"ports"`   // every protocol and range, and the server-id range
	Buckets            uint32       `json:"buckets"` // B (maglev: table size M)
	Incarnation        uint32       `json:"incarnation"`
	Generation         uint32       `json:"generation"`
	ChainWindowSeconds float64      `json:"chain_window_seconds"`
	UnownedBuckets     int          `json:"unowned_buckets"`
	FailOpen           bool         `json:"fail_open"`
	Servers            []listServer `json:"servers"`
	// CheetahKeys (cheetah): key ids and fingerprints, never the keys.
	CheetahKeys []cookie.KeyView `json:"cheetah_keys,omitempty"`
	// Error: the instance exists but its state could not be read.
	Error string `json:"error,omitempty"`
}

type listServer struct {
	ID              uint16 `json:"id"`
	Address         string `json:"address"`
	Weight          uint32 `json:"weight"`
	EffectiveWeight uint32 `json:"effective_weight"` // 0 while drained, down, pending or removing
	State           string `json:"state"`            // adding, active, removing
	Drained         bool   `json:"drained"`
	Health          string `json:"health"` // up, down, pending, suppressed
	Buckets         int    `json:"buckets"`
	// Share is the fraction (0–1) of the instance's buckets it owns.
	Share   float64 `json:"share"`
	Chained int     `json:"chained_buckets"` // buckets naming it as a previous owner within the window
}

// readList builds the list of every instance from the store.
func readList(ctx context.Context, st store.Store, root string, now time.Time) (*listView, error) {
	lv := &listView{Instances: []listInstance{}}
	if leader, err := st.Leader(ctx, controller.ElectionKey(root)); err == nil {
		lv.Controller = leader
	}
	names, err := controller.New(st, root, controller.Options{}).Instances(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		li := listInstance{Name: n, Servers: []listServer{}}
		v, err := controller.Show(ctx, st, root, n, now)
		if err != nil {
			li.Error = err.Error()
			lv.Instances = append(lv.Instances, li)
			continue
		}
		in := v.Instance
		li.Strategy, li.PortLow, li.PortHigh, li.Buckets = string(in.Strategy), in.PortLow, in.PortHigh, in.Buckets
		li.Ports = in.PortSummary()
		li.Incarnation, li.Generation = v.Load.Incarnation, v.Generation
		li.ChainWindowSeconds = in.ChainWindow.Seconds()
		li.UnownedBuckets, li.FailOpen = v.Unowned, v.FailOpen
		li.CheetahKeys = v.CheetahKeys
		for _, a := range in.VIPs {
			li.VIPs = append(li.VIPs, a.String())
		}
		for _, d := range v.DIPs {
			li.Servers = append(li.Servers, listServer{ID: uint16(d.ID), Address: d.Addr.String(), Weight: d.Weight,
				EffectiveWeight: d.Effective, State: string(d.State), Drained: d.Drained, Health: d.Health,
				Buckets: d.Buckets, Share: d.LoadShare, Chained: d.Chained})
		}
		lv.Instances = append(lv.Instances, li)
	}
	return lv, nil
}

// printList is the ipvsadm-like screen: one line per instance, one "->"
// line per server under it.
func printList(out io.Writer, lv *listView) {
	c := lv.Controller
	if c == "" {
		c = "none (start `beamer controller`)"
	}
	fmt.Fprintf(out, "controller: %s\n", c)
	var tab bytes.Buffer
	w := tabwriter.NewWriter(&tab, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INSTANCE\tVIP\tPORTS\tSTRATEGY\tGEN\tSERVER\tADDRESS\tWEIGHT\tSTATE\tHEALTH\tBUCKETS\tSHARE")
	for _, in := range lv.Instances {
		if in.Error != "" {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t\t\t\t\t\t\t\n", in.Name)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t\t\t\t\t\t%d\t\n", in.Name, strings.Join(in.VIPs, ","), in.Ports, in.Strategy, in.Generation, in.Buckets)
		for _, s := range in.Servers {
			state := s.State
			if s.Drained {
				state += ",drained"
			}
			fmt.Fprintf(w, "\t\t\t\t\t-> %d\t%s\t%d\t%s\t%s\t%d\t%.2f%%\n", s.ID, s.Address, s.Weight, state, s.Health, s.Buckets, 100*s.Share)
		}
		if len(in.Servers) == 0 {
			fmt.Fprintf(w, "\t\t\t\t\t-> none\t\t\t\t\t\t\n")
		}
	}
	w.Flush()
	for _, line := range strings.SplitAfter(tab.String(), "\n") {
		fmt.Fprint(out, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
	}
	for _, in := range lv.Instances {
		if in.Error != "" {
			fmt.Fprintf(out, "%s: %s\n", in.Name, in.Error)
		}
		if in.FailOpen {
			fmt.Fprintf(out, "%s: FAILING OPEN (every server is down; buckets stay with their last owners)\n", in.Name)
		}
	}
}

// readCmd is a read-only ctl command: its API client, its -o.
func readCmd(parent *cobra.Command, use, short string, args cobra.PositionalArgs, run func(ctx context.Context, cmd *cobra.Command, args []string, c *mgmtapi.Client, format string) error) *cobra.Command {
	cmd, f := newCtl(parent, use, short, args)
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		return f.api.withClient(*f.timeout, func(ctx context.Context, c *mgmtapi.Client) error {
			return run(ctx, cmd, args, c, *format)
		})
	}
	return cmd
}

// listJSON is the controller's side of ctl list (mgmtapi.StoreBackend).
func listJSON(ctx context.Context, st store.Store, root string) ([]byte, error) {
	lv, err := readList(ctx, st, root, time.Now())
	if err != nil {
		return nil, err
	}
	return json.Marshal(lv)
}

// addCtlRead adds show and list.
func addCtlRead(ctl *cobra.Command) {
	show := readCmd(ctl, "show NAME", "Show an instance: generation, buckets per DIP, load vs weight, fragmentation", cobra.ExactArgs(1),
		func(ctx context.Context, cmd *cobra.Command, args []string, c *mgmtapi.Client, format string) error {
			v, err := c.Show(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				format = "json"
			}
			return emit(cmd.OutOrStdout(), format, newShowDocument(v), func(w io.Writer) { printView(w, v) })
		})
	show.Flags().Bool("json", false, "print JSON (same as -o json)")

	readCmd(ctl, "list", "List every instance, VIP, port, strategy and server with weight, state, health, buckets and share", cobra.NoArgs,
		func(ctx context.Context, cmd *cobra.Command, _ []string, c *mgmtapi.Client, format string) error {
			r, err := c.List(ctx)
			if err != nil {
				return err
			}
			var lv listView
			if err := json.Unmarshal(r.GetListJson(), &lv); err != nil {
				return fmt.Errorf("the controller's list: %w", err)
			}
			return emit(cmd.OutOrStdout(), format, &lv, func(w io.Writer) { printList(w, &lv) })
		})
}
