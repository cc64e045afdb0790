package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/research/lab"
	"github.com/spf13/cobra"
)

// labFlags override the parameters of a size; only flags given count.
type labFlags struct {
	udpFlows, quicFlows                           int // issue 17: UDP flows and QUIC connections per client
	family                                        int // issue 16: 6 runs the service over IPv6
	clients, perClient, servers, muxes, floodRate int
	fileSize, removed, store                      string
	buckets                                       uint32
	window, stall, warmup, step                   time.Duration
	seed                                          int64
	mptcp, persistent                             bool
	encap                                         string
}

func (f *labFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.clients, "clients", 0, "client namespaces")
	fl.IntVar(&f.perClient, "connections", 0, "concurrent connections per client")
	fl.StringVar(&f.fileSize, "file-size", "", "bytes per download (e.g. 1MiB, 256KiB, 5000)")
	fl.Uint32Var(&f.buckets, "buckets", 0, "bucket count B")
	fl.DurationVar(&f.window, "window", 0, "chaining window (beamer strategy)")
	fl.DurationVar(&f.stall, "stall", 0, "a connection receiving nothing this long is broken")
	fl.Int64Var(&f.seed, "seed", 0, "seed: client ports (hence flows) and the router's ECMP hash")
	fl.IntVar(&f.servers, "servers", 0, "servers of the experiment")
	fl.IntVar(&f.muxes, "muxes", 0, "muxes of the experiment")
	fl.StringVar(&f.removed, "removed", "", "servers removed (affinity, synflood): N, N-M or N,M,… (one run each)")
	fl.IntVar(&f.floodRate, "flood-rate", 0, fmt.Sprintf("SYN flood rate, SYNs/s (synflood; at most %d)", lab.MaxFloodRate))
	fl.DurationVar(&f.warmup, "warmup", 0, "load before the first event")
	fl.DurationVar(&f.step, "step", 0, "time between events")
	fl.StringVar(&f.store, "store", "", "store the controller runs on: "+strings.Join(lab.Stores, ", "))
	fl.BoolVar(&f.mptcp, "mptcp", false, "clients use MPTCP")
	fl.BoolVar(&f.persistent, "persistent", false, "persistent connections (else one download per connection)")
	fl.IntVar(&f.quicFlows, "quic-flows", 0, "QUIC connections per client to VIP:443 beside the TCP load, routed by connection id, each migrating once")
	fl.StringVar(&f.encap, "encap", "", "the instance's encapsulation: ipip (default) or gue")
	fl.IntVar(&f.udpFlows, "udp-flows", 0, "long-lived UDP flows per client to VIP:53 beside the TCP load (servers answer from connected sockets)")
	fl.IntVar(&f.family, "family", 0, "6: the service over IPv6 (VIP 2001:db8:100::1, IPv6 servers, GUE over IPv6; beamer strategy only)")
}

// plan expands experiments × removal counts × strategies into runs.
func (f *labFlags) plan(cmd *cobra.Command, names, strategies []string, size string, sc *lab.Scenario) ([]lab.RunOptions, error) {
	removed, err := parseCounts(f.removed)
	if err != nil {
		return nil, fmt.Errorf("--removed: %w", err)
	}
	var runs []lab.RunOptions
	for _, name := range names {
		counts := []int{0}
		if len(removed) > 0 && (name == "affinity" || name == "synflood") {
			counts = removed
		}
		for _, k := range counts {
			for _, s := range strategies {
				p, err := lab.DefaultParams(name, size, s)
				if err != nil {
					return nil, err
				}
				if err := f.apply(cmd, &p); err != nil {
					return nil, err
				}
				if k > 0 {
					p.Removed = k
				}
				run := lab.RunOptions{Params: p, Scenario: sc}
				if sc != nil {
					run.Params.Experiment = "" // a file, not the experiment whose defaults it took
				} else if _, _, err := lab.ExperimentScenario(&run.Params); err != nil {
					return nil, err
				}
				if err := run.Params.Validate(); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				runs = append(runs, run)
			}
		}
	}
	return runs, nil
}

func (f *labFlags) apply(cmd *cobra.Command, p *lab.Params) error {
	set := cmd.Flags().Changed
	if set("clients") {
		p.Clients = f.clients
	}
	if set("connections") {
		p.PerClient = f.perClient
	}
	if set("file-size") {
		n, err := parseBytes(f.fileSize)
		if err != nil {
			return fmt.Errorf("--file-size: %w", err)
		}
		p.FileSize = n
	}
	if set("buckets") {
		p.Buckets = f.buckets
	}
	if set("window") {
		p.Window = lab.Duration(f.window)
	}
	if set("stall") {
		p.Stall = lab.Duration(f.stall)
	}
	if set("seed") {
		p.Seed = f.seed
	}
	if set("servers") {
		p.Servers = f.servers
	}
	if set("muxes") {
		p.Muxes = f.muxes
	}
	if set("flood-rate") {
		p.FloodRate = f.floodRate
	}
	if set("warmup") {
		p.Warmup = lab.Duration(f.warmup)
	}
	if set("step") {
		p.Step = lab.Duration(f.step)
	}
	if set("store") {
		p.Store = f.store
	}
	if set("mptcp") {
		p.MPTCP = f.mptcp
	}
	if set("persistent") {
		p.Persistent = f.persistent
	}
	if set("udp-flows") {
		p.UDPFlows = f.udpFlows
	}
	if set("family") {
		p.Family = f.family
	}
	if set("quic-flows") {
		p.QUICFlows = f.quicFlows
	}
	if set("encap") {
		p.Encap = f.encap
	}
	return nil
}

// parseCounts reads N, N-M or N,M,….
func parseCounts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.Atoi(a)
		hi, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || lo < 1 || hi < lo {
			return nil, fmt.Errorf("%q: want N-M with 1 ≤ N ≤ M", s)
		}
		var out []int
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
		return out, nil
	}
	var out []int
	for _, x := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", x)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseBytes reads 5000, 256KiB, 1MiB (KB and MB are taken as KiB, MiB).
func parseBytes(s string) (int, error) {
	mult := 1
	num := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q: want a positive size like 1MiB or 5000", s)
	}
	return n * mult, nil
}
