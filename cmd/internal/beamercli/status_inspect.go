package beamercli

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/nodestate"
	"github.com/spf13/cobra"
)

// `beamer mux inspect` and `beamer agent inspect` read what a node's data
// plane holds from the maps of its pinned program, without the daemon:
// while it is stopped, crashed or being upgraded (its program keeps
// forwarding with the last tables). `status` asks a running daemon;
// `inspect` needs only root and the pins (pkg/dataplane/inspect_maps.go).

// newInspectCommand is `inspect` under the mux or agent command (role);
// read reads the pinned maps in a directory.
func newInspectCommand(role string, read func(dir string) (any, func(io.Writer), error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect [--pin-dir DIR | --iface IFACE]",
		Short: "Show what this node's " + role + " program forwards, read from its pinned maps (no daemon needed)",
		Long: `Reads the maps of the ` + role + `'s pinned program directly (as root), so it works while the daemon
is stopped or being upgraded. The pin directory is --pin-dir, else the daemon's default for
--iface in this network namespace (/sys/fs/bpf/beamer/` + role + `-NETNS-IFACE), else the only
` + role + `-* directory under /sys/fs/bpf/beamer.`,
		Args: cobra.NoArgs,
	}
	pinDir := cmd.Flags().String("pin-dir", "", "the daemon's --pin-dir")
	iface := cmd.Flags().String("iface", "", "the daemon's interface, naming its default pin directory")
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		dir, err := inspectDir(role, *pinDir, *iface)
		if err != nil {
			return err
		}
		v, table, err := read(dir)
		if err != nil {
			return err
		}
		return emit(cmd.OutOrStdout(), *format, v, table)
	}
	return cmd
}

// defaultPinDir is the pin directory a daemon of role on iface takes
// without --pin-dir, in this process's network namespace (muxd and agentd
// Options.defaults).
func defaultPinDir(role, iface string) (string, error) {
	name, err := nodestate.Name(role, iface)
	if err != nil {
		return "", err
	}
	return filepath.Join(dataplane.BPFFSRoot, "beamer", name), nil
}

// inspectDir is the pin directory to read (see the command's Long).
func inspectDir(role, pinDir, iface string) (string, error) {
	if pinDir != "" {
		return pinDir, nil
	}
	root := filepath.Join(dataplane.BPFFSRoot, "beamer")
	if iface != "" {
		return defaultPinDir(role, iface)
	}
	found, _ := filepath.Glob(filepath.Join(root, role+"-*"))
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no %s pinned under %s: give --pin-dir (the daemon's --pin-dir) or --iface", role, root)
	}
	return "", fmt.Errorf("several %ss pinned under %s (%s): give --pin-dir or --iface", role, root, strings.Join(found, ", "))
}

// newMuxInspectCommand is `beamer mux inspect`.
func newMuxInspectCommand() *cobra.Command {
	return newInspectCommand("mux", func(dir string) (any, func(io.Writer), error) {
		in, err := dataplane.InspectMux(dir)
		if err != nil {
			return nil, nil, err
		}
		return in, func(w io.Writer) { printMuxInspection(w, in) }, nil
	})
}

// newAgentInspectCommand is `beamer agent inspect`.
func newAgentInspectCommand() *cobra.Command {
	return newInspectCommand("agent", func(dir string) (any, func(io.Writer), error) {
		in, err := dataplane.InspectAgent(dir, time.Now())
		if err != nil {
			return nil, nil, err
		}
		return in, func(w io.Writer) { printAgentInspection(w, in) }, nil
	})
}

// printMuxInspection prints each table as ctl show prints an instance's
// servers (id, address, buckets), so the two compare line by line.
func printMuxInspection(out io.Writer, in *dataplane.MuxInspection) {
	fmt.Fprintf(out, "pin dir: %s\nprogram: %s (id %d, tag %s)\n", in.PinDir, in.Program.Name, in.Program.ID, in.Program.Tag)
	if len(in.Tables) == 0 {
		fmt.Fprintln(out, "\nno VIPs loaded")
	}
	for _, t := range in.Tables {
		fmt.Fprintf(out, "\ntable %d: strategy %s, encap %s", t.Slot, t.Strategy, t.Encap)
		if t.GUEPort != 0 {
			fmt.Fprintf(out, " (port %d)", t.GUEPort)
		}
		fmt.Fprintf(out, ", %d buckets, ports %s\n", t.Buckets, strings.Join(t.Ports, ", "))
		for _, v := range t.VIPs {
			fmt.Fprintf(out, "  vip %s  incarnation %d  generation %d", v.VIP, v.Incarnation, v.Generation)
			if tr := v.Traffic; tr != nil {
				var dropped uint64
				for _, n := range tr.Drops {
					dropped += n
				}
				fmt.Fprintf(out, "  packets %d  bytes %d  new flows %d  dropped %d", tr.Packets, tr.Bytes, tr.NewFlows, dropped)
			}
			fmt.Fprintln(out)
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  ID\tADDRESS\tSTATE\tBUCKETS\tPACKETS\tBYTES")
		for _, s := range t.Servers {
			fmt.Fprintf(w, "  %d\t%s\t%s\t%d\t%d\t%d\n", s.ID, s.Addr, s.State, s.Buckets, s.Packets, s.Bytes)
		}
		w.Flush()
		fmt.Fprintf(out, "  unowned buckets: %d\n  chained buckets: %d", t.Unowned, t.Chained)
		if len(t.PreviousOwners) > 0 {
			var prev []string
			for _, p := range t.PreviousOwners {
				prev = append(prev, fmt.Sprintf("%d (%d buckets)", p.ID, p.Buckets))
			}
			fmt.Fprintf(out, "; previous owners: %s", strings.Join(prev, ", "))
		}
		if t.ChainsMissing > 0 {
			fmt.Fprintf(out, "; %d name a history that is not loaded", t.ChainsMissing)
		}
		fmt.Fprintln(out)
	}
	if len(in.PublishedNextHops) > 0 {
		fmt.Fprintln(out, "\nnext hops (published by the daemon):")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  ADDRESS\tIFINDEX\tMAC\tMTU")
		for _, h := range in.PublishedNextHops {
			fmt.Fprintf(w, "  %s\t%d\t%s\t%d\n", h.Addr, h.Ifindex, h.MAC, h.MTU)
		}
		w.Flush()
	}
	if len(in.NextHops) > 0 {
		fmt.Fprintln(out, "\nnext hops (cache):")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  ADDRESS\tIFINDEX\tMAC\tMTU\tCURRENT")
		for _, h := range in.NextHops {
			fmt.Fprintf(w, "  %s\t%d\t%s\t%d\t%v\n", h.Addr, h.Ifindex, h.MAC, h.MTU, h.Current)
		}
		w.Flush()
	}
	fmt.Fprintln(out)
	printCounters(out, in.Counters)
}

func printAgentInspection(out io.Writer, in *dataplane.AgentInspection) {
	fmt.Fprintf(out, "pin dir: %s\nprogram: %s (id %d, tag %s)\n\n", in.PinDir, in.Program.Name, in.Program.ID, in.Program.Tag)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VIP\tBUCKETS\tWINDOW\tINCARNATION\tGENERATION\tMOVED\tCHAINING")
	for _, v := range in.VIPs {
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%d\t%d\n", v.VIP, v.Buckets, v.Window, v.Incarnation, v.Generation, v.Moved, v.Chaining)
	}
	w.Flush()
	for _, st := range in.Strategies {
		if st.Text != nil {
			st.Text(out)
		}
	}
	fmt.Fprintln(out)
	printCounters(out, in.Counters)
	// A strategy's counters, when it has something to show.
	for _, st := range in.Strategies {
		if len(st.Fields) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(st.Counters))
		for _, k := range keys {
			fmt.Fprintf(out, "%s ", st.Strategy)
			printCounters(out, st.Counters[k])
		}
	}
}
