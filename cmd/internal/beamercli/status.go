package beamercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/node/agentd"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/spf13/cobra"
)

// `beamer mux status` and `beamer agent status` show what this node's data
// plane holds, read by the running daemon from its BPF maps and served on
// its metrics address (GET /status): the bucket counts come from the
// kernel's bucket array, not from the store.

// newStatusCommand is `status` under the mux or agent command: what (mux,
// agent) names the daemon in the help, fetch reads its /status.
func newStatusCommand(what string, fetch func(addr string) (any, func(io.Writer), error)) *cobra.Command {
	cmd := &cobra.Command{Use: "status --metrics ADDR", Short: "Show what this node's " + what + " data plane holds (from the running daemon's --metrics address)", Args: cobra.NoArgs}
	addr := cmd.Flags().String("metrics", "", "the running daemon's --metrics address, e.g. 127.0.0.1:9100")
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		if *addr == "" {
			return errors.New("give --metrics ADDR: the address the " + what + " serves /metrics on (its --metrics, or metrics: in its file)")
		}
		v, table, err := fetch(*addr)
		if err != nil {
			return err
		}
		return emit(cmd.OutOrStdout(), *format, v, table)
	}
	return cmd
}

// newMuxStatusCommand is `beamer mux status`.
func newMuxStatusCommand() *cobra.Command {
	return newStatusCommand("mux", func(addr string) (any, func(io.Writer), error) {
		var s muxd.Status
		if err := metrics.FetchStatus(context.Background(), addr, &s); err != nil {
			return nil, nil, err
		}
		return &s, func(w io.Writer) { printMuxStatus(w, &s) }, nil
	})
}

// newAgentStatusCommand is `beamer agent status`.
func newAgentStatusCommand() *cobra.Command {
	return newStatusCommand("agent", func(addr string) (any, func(io.Writer), error) {
		var s agentd.Status
		if err := metrics.FetchStatus(context.Background(), addr, &s); err != nil {
			return nil, nil, err
		}
		return &s, func(w io.Writer) { printAgentStatus(w, &s) }, nil
	})
}

func printMuxStatus(out io.Writer, s *muxd.Status) {
	if s.Address6 != "" {
		fmt.Fprintf(out, "mux on %s (%s, %s)\n", s.Interface, s.Address, s.Address6)
	} else {
		fmt.Fprintf(out, "mux on %s (%s)\n", s.Interface, s.Address)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INSTANCE\tVIP\tPORTS\tSTRATEGY\tINCARNATION\tGEN\tSERVER\tADDRESS\tSTATE\tBUCKETS")
	for _, in := range s.Instances {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t\t\t\t%d\n", in.Name, strings.Join(in.VIPs, ","), in.Ports, in.Strategy, in.Incarnation, in.Generation, in.Buckets)
		for _, sv := range in.Servers {
			fmt.Fprintf(w, "\t\t\t\t\t\t-> %d\t%s\t%s\t%d\n", sv.ID, sv.Address, sv.State, sv.Buckets)
		}
		if in.UnownedBuckets > 0 {
			fmt.Fprintf(w, "\t\t\t\t\t\t-> none\t\tunowned\t%d\n", in.UnownedBuckets)
		}
	}
	w.Flush()
	printCounters(out, s.Counters)
}

func printAgentStatus(out io.Writer, s *agentd.Status) {
	fmt.Fprintf(out, "agent on %s, server id %d\n", s.Interface, s.ServerID)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VIP\tBUCKETS\tWINDOW\tNEWEST INCARNATION\tNEWEST GEN\tPACKETS\tBYTES\tCHAINED IN")
	for _, v := range s.VIPs {
		pk, by, ch := "-", "-", "-" // without --metrics nothing counts them
		if t := v.Traffic; t != nil {
			pk, by, ch = fmt.Sprint(t.Packets), fmt.Sprint(t.Bytes), fmt.Sprint(t.ChainedPackets)
		}
		fmt.Fprintf(w, "%s\t%d\t%gs\t%d\t%d\t%s\t%s\t%s\n", v.VIP, v.Buckets, v.ChainWindowSeconds, v.Incarnation, v.Generation, pk, by, ch)
	}
	w.Flush()
	printCounters(out, s.Counters)
}

// printCounters prints the non-zero decision counters, sorted by name.
func printCounters(out io.Writer, c map[string]uint64) {
	var names []string
	for n, v := range c {
		if v != 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		fmt.Fprintf(out, "packets: none counted yet (%d counters, all 0)\n", len(c))
		return
	}
	fmt.Fprint(out, "packets:")
	for _, n := range names {
		fmt.Fprintf(out, " %s=%d", n, c[n])
	}
	fmt.Fprintf(out, " (%d other counters at 0; -o json lists all)\n", len(c)-len(names))
}
