package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/nodestate"
	"github.com/spf13/cobra"
)

// `beamer mux inspect` and `beamer agent inspect`: what a node forwards
// now, read from the kernel through the daemon's pinned link — also while
// the daemon is stopped, crashed or being upgraded (dataplane/inspect.go).

// addInspect adds `inspect` under the named daemon command.
func addInspect(daemon, long string, run func(w io.Writer, dir, format string) error) {
	var iface, pinDir string
	cmd := &cobra.Command{
		Use:     "inspect",
		Short:   fmt.Sprintf("Show what the %s on an interface forwards now, from its pinned maps (also with the daemon down)", daemon),
		Long:    long,
		Example: fmt.Sprintf("  beamer %s inspect --iface eth0\n  beamer %s inspect --pin-dir /sys/fs/bpf/beamer/%s-NETNS-eth0 -o json", daemon, daemon, daemon),
		Args:    cobra.NoArgs,
	}
	cmd.Flags().StringVar(&iface, "iface", "", fmt.Sprintf("the %s's interface (its default pin directory)", daemon))
	cmd.Flags().StringVar(&pinDir, "pin-dir", "", fmt.Sprintf("the %s's --pin-dir, when it was given one", daemon))
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		if pinDir == "" {
			if iface == "" {
				return errors.New("give the daemon's --iface, or its --pin-dir")
			}
			name, err := nodestate.Name(daemon, iface)
			if err != nil {
				return err
			}
			pinDir = filepath.Join(dataplane.BPFFSRoot, "beamer", name)
		}
		return run(cmd.OutOrStdout(), pinDir, *format)
	}
	for _, c := range rootCmd.Commands() {
		if c.Name() == daemon {
			c.AddCommand(cmd)
			return
		}
	}
	panic("no " + daemon + " command")
}

func printMuxInspect(w io.Writer, v *dataplane.MuxView) {
	fmt.Fprintf(w, "mux program %d, pinned in %s\n\n", v.ProgramID, v.PinDir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VIP\tTABLE\tSTRATEGY\tBUCKETS\tPORTS\tENCAP\tGENERATION\tINCARNATION\tPACKETS\tBYTES\tNEW FLOWS\tDROPPED")
	for _, vip := range v.VIPs {
		var pkts, bytes, flows, dropped uint64
		if t := vip.Traffic; t != nil {
			pkts, bytes, flows = t.Packets, t.Bytes, t.NewFlows
			for _, n := range t.Drops {
				dropped += n
			}
		}
		fmt.Fprintf(tw, "%v\t%d\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", vip.VIP, vip.Table, vip.Strategy, vip.Buckets,
			strings.Join(vip.Ports, ","), vip.Encap, vip.Generation, vip.Incarnation, pkts, bytes, flows, dropped)
	}
	tw.Flush()
	for _, t := range v.Tables {
		fmt.Fprintf(w, "\ntable %d: %d buckets, %d with previous owners, %d without an owner\n", t.Table, t.Buckets, t.Moved, t.Unowned)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tBUCKETS\tPACKETS\tBYTES")
		for _, s := range t.Servers {
			fmt.Fprintf(tw, "%d\t%v\t%s\t%d\t%d\t%d\n", s.ID, s.Addr, s.State, s.Buckets, s.Packets, s.Bytes)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	printCounters(w, v.Counters) // status.go
}

func printAgentInspect(w io.Writer, v *dataplane.AgentView) {
	fmt.Fprintf(w, "agent program %d, pinned in %s\n\n", v.ProgramID, v.PinDir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VIP\tBUCKETS\tWINDOW\tGENERATION\tINCARNATION\tCHANGED BUCKETS")
	for _, vip := range v.VIPs {
		fmt.Fprintf(tw, "%v\t%d\t%s\t%d\t%d\t%d\n", vip.VIP, vip.Buckets, formatSeconds(time.Duration(vip.WindowSeconds)*time.Second),
			vip.Generation, vip.Incarnation, vip.ChangedBuckets)
	}
	tw.Flush()
	trusted := make([]string, len(v.Trusted))
	for i, p := range v.Trusted {
		trusted[i] = p.String()
	}
	fmt.Fprintf(w, "\ntrusted sources: %s\n", strings.Join(trusted, ", "))
	for _, c := range v.Cheetah {
		var keys []string
		for _, k := range c.Keys {
			cur := ""
			if k.Current {
				cur = " (current)"
			}
			keys = append(keys, fmt.Sprintf("id %d %s%s", k.ID, k.Fingerprint, cur))
		}
		fmt.Fprintf(w, "cheetah %v: server slot %d, keys %s\n", c.VIP, c.ServerSlot, strings.Join(keys, ", "))
	}
	fmt.Fprintln(w)
	printCounters(w, v.Counters) // status.go
}
