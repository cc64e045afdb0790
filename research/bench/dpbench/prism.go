package dpbench

import (
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

var prismVIP = netip.MustParseAddr("198.18.100.3")

// prismUnrelated is how many MCT entries the miss rows carry that match no
// measured flow: a loaded MCT, as after pool updates.
const prismUnrelated = 10000

// benchFlow is repetition i's connection (rotate_flow in bpf/bench/mux_bench.h).
func benchFlow(dst netip.Addr, i uint32) wire.Flow {
	return wire.Flow{Src: netip.AddrFrom4([4]byte{198, 19, byte(i >> 22), byte(i >> 14)}), Dst: dst,
		SrcPort: uint16(1024 + i&0x3fff), DstPort: 80, Proto: wire.ProtoTCP}
}

// prismInstance is a Prism VIP of 1,000 bins over the bench servers whose
// MCT holds the signatures of the n bench flows (hit) or prismUnrelated
// others (miss).
func prismInstance(n int, hit, empty bool) (forwarding.Instance, *forwarding.Table) {
	const bins = 1000
	t := forwarding.NewTable(bins)
	t.Servers, _ = serverSet()
	for i := range t.Buckets {
		t.Buckets[i] = forwarding.Bucket{Current: 1025 + forwarding.ServerID(i%servers)}
	}
	t.MCT = map[uint64]forwarding.ServerID{}
	if hit {
		for i := range uint32(n) {
			f := benchFlow(prismVIP, i)
			// The connection's old owner: not the bin's current one.
			owner := t.Buckets[f.Bucket(bins)].Current
			t.MCT[f.Signature()] = 1025 + (owner-1025+1)%servers
		}
	} else if !empty {
		for i := range uint32(prismUnrelated) {
			f := benchFlow(prismVIP, i)
			f.DstPort = 81 // same addresses, another port: never a measured flow
			t.MCT[f.Signature()] = 1025 + forwarding.ServerID(i%servers)
		}
	}
	t.Generation = 1
	cfg := forwarding.Instance{Name: "prism", Strategy: forwarding.StrategyPrism, VIPs: []netip.Addr{prismVIP},
		PortLow: 80, PortHigh: 81, Buckets: bins, Prism: &forwarding.PrismOptions{MCTEntries: uint32(max(len(t.MCT), 1024))}}
	return cfg, t
}

// prismRows measures the Prism mux on n flows: an empty MCT (the bin's
// owner), every packet a miss on a loaded MCT (the bin's owner), or every
// packet an MCT hit (its signature migrated).
func prismRows(r *rig, o Options, n int, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	for _, mode := range []string{"empty", "miss", "hit"} {
		hit := mode == "hit"
		cfg, table := prismInstance(n, hit, mode == "empty")
		m, err := loadMux(cfg, table, 0, o)
		if err != nil {
			return err
		}
		if err := setBenchFlows(m, n); err != nil {
			m.Close()
			return err
		}
		f := frame(prismVIP, 80, wiretest.ACK)
		t := trial{ns: r.ns, prog: m.BenchProgram(), frame: f, ctx: ctx(f), want: xdpTX, repeat: o.Repeat, counter: "prism_mct_miss", read: m.Counters,
			base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(), frameAt: rotating(prismVIP, 80, wiretest.ACK, n), packets: o.PerPacket}
		name, what := "prism-miss", fmt.Sprintf("MCT of %d entries none of which matches: the bin's owner", prismUnrelated)
		if mode == "empty" {
			name, what = "prism-empty", "empty MCT (no migrated connection alive, the common case): the bin's owner, no MCT lookup"
		}
		if hit {
			t.counter = "prism_mct_hit"
			name, what = "prism-hit", fmt.Sprintf("MCT holds all %d flows' signatures: every packet a hit (keep-alive bit already set)", n)
		}
		err = add(name, n, int(cfg.Buckets), t, "test run, repeat; each repetition a new flow, encapsulation undone after it; "+what)
		m.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
