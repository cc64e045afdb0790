package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/prism"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// prismRig is a Prism-strategy mux on the vectors' bench network (the
// Maglev scenario's servers and table, as bins).
type prismRig struct {
	t     *testing.T
	m     *Mux
	bench *muxBench
	table *forwarding.Table
	vip   netip.Addr
}

func newPrismRig(t *testing.T) *prismRig {
	v, err := wiretest.LoadVectors()
	must(t, err)
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	cfg := v.Maglev.Instance
	cfg.Strategy = forwarding.StrategyPrism
	must(t, m.SetInstance(cfg, table))
	return &prismRig{t: t, m: m, bench: newMuxBench(t, &v.Mux), table: table, vip: cfg.VIPs[0]}
}

func (r *prismRig) flow(port uint16) wire.Flow {
	return wire.Flow{Src: netip.MustParseAddr("198.18.200.9"), Dst: r.vip, SrcPort: port, DstPort: 80, Proto: wire.ProtoTCP}
}

func (r *prismRig) send(f wire.Flow, flags int) (netip.Addr, string) {
	r.t.Helper()
	before, err := r.m.Counters()
	must(r.t, err)
	frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{Flow: f, Flags: flags}.IPv4())
	action, out := runXDP(r.t, r.bench.ns, r.bench.ifindex, r.m.Program(), frame)
	after, err := r.m.Counters()
	must(r.t, err)
	moved := ""
	for _, c := range []string{"prism_mct_hit", "prism_mct_miss", "fwd_server_id"} {
		if after[c] != before[c] {
			moved = c
		}
	}
	if action != "tx" && action != "redirect" {
		r.t.Fatalf("flow %v: %s", f, action)
	}
	o, err := wire.Decapsulate(out[14:])
	must(r.t, err)
	if o.Option != nil {
		r.t.Fatalf("prism packet carries a Beamer option")
	}
	return o.Dst, moved
}

func (r *prismRig) apply(d *forwarding.Delta) error {
	r.t.Helper()
	d.Generation = r.table.Generation + 1
	if err := r.m.ApplyDelta("shop", d); err != nil {
		return err
	}
	must(r.t, r.table.Apply(d))
	return nil
}

// TestPrismMCTForwarding: on real packets, a connection whose bin flips in
// the same generation as its MCT entry stays with its server (MCT hit, the
// signature computed by the BPF program equals pkg/wire's), a new
// connection of that bin goes to the new owner (miss); the keep-alive bit
// is set by traffic, cleared by a sweep, and an idle entry is reported;
// removing the entry sends the connection to the bin.
func TestPrismMCTForwarding(t *testing.T) {
	r := newPrismRig(t)
	f := r.flow(41000)
	first, c := r.send(f, wiretest.SYN)
	if c != "prism_mct_miss" {
		t.Fatalf("SYN counted as %q", c)
	}
	bin := f.Bucket(uint32(len(r.table.Buckets)))
	owner := r.table.Buckets[bin].Current
	other := forwarding.ServerID(1025)
	if other == owner {
		other = 1026
	}
	must(t, r.apply(&forwarding.Delta{
		MCT:     []forwarding.MCTChange{{Sig: f.Signature(), Server: owner}},
		Buckets: []forwarding.BucketChange{{Index: bin, Bucket: forwarding.Bucket{Current: other}}},
	}))
	if got, c := r.send(f, wiretest.ACK); got != first || c != "prism_mct_hit" {
		t.Fatalf("migrated connection after the flip: to %v (%s), want %v by an MCT hit", got, c, first)
	}
	var g wire.Flow
	for p := uint16(42000); ; p++ {
		if g = r.flow(p); g.Bucket(uint32(len(r.table.Buckets))) == bin {
			break
		}
	}
	if got, c := r.send(g, wiretest.SYN); got != r.table.Servers[other].Addr || c != "prism_mct_miss" {
		t.Fatalf("new connection of the flipped bin: to %v (%s), want the new owner", got, c)
	}

	b, err := prism.MCTStats(r.m.WithInstance, "shop", true)
	must(t, err)
	if b.Entries != 1 || len(b.Hit) != 1 || b.Hit[0] != f.Signature() || len(b.Idle) != 0 || b.Size != forwarding.DefaultMCTEntries {
		t.Fatalf("after traffic: %+v", b)
	}
	b, err = prism.MCTStats(r.m.WithInstance, "shop", true)
	must(t, err)
	if len(b.Hit) != 0 || len(b.Idle) != 1 || b.Idle[0] != f.Signature() {
		t.Fatalf("sweep without traffic: %+v", b)
	}
	r.send(f, wiretest.ACK)
	if b, err = prism.MCTStats(r.m.WithInstance, "shop", false); err != nil || len(b.Hit) != 1 {
		t.Fatalf("traffic after a sweep: %+v (%v)", b, err)
	}
	if b, err = prism.MCTStats(r.m.WithInstance, "shop", false); err != nil || len(b.Hit) != 1 {
		t.Fatalf("a read without sweep cleared the bit: %+v (%v)", b, err)
	}

	slot := r.m.instances["shop"].slot
	var inner uint32
	if err := r.m.objs.MctTables.Lookup(slot, &inner); err != nil {
		t.Fatalf("an MCT with an entry is not in its slot: %v", err)
	}
	must(t, r.apply(&forwarding.Delta{MCT: []forwarding.MCTChange{{Sig: f.Signature(), Remove: true}}}))
	if got, c := r.send(f, wiretest.ACK); got != r.table.Servers[other].Addr || c != "prism_mct_miss" {
		t.Fatalf("after the entry's removal: to %v (%s), want the bin's owner", got, c)
	}
	// Empty, the MCT leaves its slot (packets skip the lookup); an entry
	// puts it back before the generation's bucket words.
	if err := r.m.objs.MctTables.Lookup(slot, &inner); err == nil {
		t.Fatal("an empty MCT is still in its slot")
	}
	must(t, r.apply(&forwarding.Delta{
		MCT:     []forwarding.MCTChange{{Sig: f.Signature(), Server: owner}},
		Buckets: []forwarding.BucketChange{{Index: bin, Bucket: forwarding.Bucket{Current: other}}},
	}))
	if got, c := r.send(f, wiretest.ACK); got != first || c != "prism_mct_hit" {
		t.Fatalf("an entry added to an empty MCT: to %v (%s), want %v by an MCT hit", got, c, first)
	}
}

// TestPrismApplyOrder: a delta whose MCT entry names a server the table
// lacks is refused whole — the bin it would flip does not flip (a mux never
// shows a flip without its entries); a resync (SetInstance) loads the MCT
// with the table.
func TestPrismApplyOrder(t *testing.T) {
	r := newPrismRig(t)
	f := r.flow(43000)
	first, _ := r.send(f, wiretest.SYN)
	bin := f.Bucket(uint32(len(r.table.Buckets)))
	owner := r.table.Buckets[bin].Current
	other := forwarding.ServerID(1025)
	if other == owner {
		other = 1026
	}
	bad := &forwarding.Delta{
		MCT:     []forwarding.MCTChange{{Sig: f.Signature(), Server: 4000}},
		Buckets: []forwarding.BucketChange{{Index: bin, Bucket: forwarding.Bucket{Current: other}}},
	}
	if err := r.apply(bad); err == nil {
		t.Fatal("delta with an MCT entry naming an unknown server applied")
	}
	if got, _ := r.send(f, wiretest.ACK); got != first {
		t.Fatalf("refused delta moved the bin: to %v, want %v", got, first)
	}
	tab := r.table.Clone()
	tab.Generation++
	tab.Buckets[bin] = forwarding.Bucket{Current: other}
	tab.MCT = map[uint64]forwarding.ServerID{f.Signature(): owner}
	cfg := forwarding.Instance{}
	v, err := wiretest.LoadVectors()
	must(t, err)
	cfg = v.Maglev.Instance
	cfg.Strategy = forwarding.StrategyPrism
	must(t, r.m.SetInstance(cfg, tab))
	if got, c := r.send(f, wiretest.ACK); got != first || c != "prism_mct_hit" {
		t.Fatalf("after a resync with the MCT: to %v (%s), want %v by a hit", got, c, first)
	}
}

// TestPrismSYNLearning: a SYN forwarded by a bin announced as migrating
// (owner unchanged, Changed set) is remembered by the mux; after the bin
// flips, before any MCT entry for it exists, the connection's packets
// still reach the server of its SYN (learned hit). SYNs of bins not
// migrating are not remembered.
func TestPrismSYNLearning(t *testing.T) {
	r := newPrismRig(t)
	f := r.flow(44000)
	bin := f.Bucket(uint32(len(r.table.Buckets)))
	owner := r.table.Buckets[bin].Current
	other := forwarding.ServerID(1025)
	if other == owner {
		other = 1026
	}
	quiet := r.flow(44001)
	for p := uint16(44001); quiet.Bucket(uint32(len(r.table.Buckets))) == bin; p++ {
		quiet = r.flow(p)
	}
	r.send(quiet, wiretest.SYN)
	must(t, r.apply(&forwarding.Delta{Buckets: []forwarding.BucketChange{{Index: bin, Bucket: forwarding.Bucket{Current: owner, Changed: 1763700000}}}}))
	before, err := r.m.Counters()
	must(t, err)
	first, _ := r.send(f, wiretest.SYN)
	after, err := r.m.Counters()
	must(t, err)
	if after["prism_learned"] != before["prism_learned"]+1 {
		t.Fatalf("SYN in a migrating bin not remembered (counters %v)", after)
	}
	qb := quiet.Bucket(uint32(len(r.table.Buckets)))
	must(t, r.apply(&forwarding.Delta{Buckets: []forwarding.BucketChange{
		{Index: bin, Bucket: forwarding.Bucket{Current: other}},
		{Index: qb, Bucket: forwarding.Bucket{Current: r.table.Buckets[qb].Current%2 + 1025}},
	}}))
	if got, _ := r.send(f, wiretest.ACK); got != first {
		t.Fatalf("after the flip, without an MCT entry: to %v, want %v (remembered since the SYN)", got, first)
	}
	c, err := r.m.Counters()
	must(t, err)
	if c["prism_learned_hit"] == 0 {
		t.Fatalf("no learned hit counted: %v", c)
	}
	if got, _ := r.send(quiet, wiretest.ACK); got != r.table.Servers[r.table.Buckets[qb].Current].Addr {
		t.Fatalf("a connection of a bin that was not migrating was remembered: to %v", got)
	}
}

// TestPrismSignatureVectors: the BPF program computes the signatures of
// testdata/prism-signatures.json — an MCT entry keyed by the file's value
// (not by Go's computation) is hit by the vector's packet.
func TestPrismSignatureVectors(t *testing.T) {
	vs, err := wiretest.LoadPrismVectors()
	must(t, err)
	v, err := wiretest.LoadVectors()
	must(t, err)
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	cfg := v.Maglev.Instance
	cfg.Strategy = forwarding.StrategyPrism
	cfg.VIPs = nil
	cfg.PortLow, cfg.PortHigh = 1, 1024
	table.MCT = map[uint64]forwarding.ServerID{}
	for _, pv := range vs {
		sig, err := pv.Signature()
		must(t, err)
		cfg.VIPs = append(cfg.VIPs, pv.Dst)
		// The entry names a server the bin does not: only a hit reaches it.
		owner := table.Buckets[pv.Flow().Bucket(uint32(len(table.Buckets)))].Current
		table.MCT[sig] = 1025 + (owner-1025+1)%3
	}
	must(t, m.SetInstance(cfg, table))
	bench := newMuxBench(t, &v.Mux)
	for _, pv := range vs {
		sig, _ := pv.Signature()
		frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{Flow: pv.Flow(), Flags: wiretest.ACK}.IPv4())
		action, out := runXDP(t, bench.ns, bench.ifindex, m.Program(), frame)
		if action != "tx" && action != "redirect" {
			t.Fatalf("%v: %s", pv.Flow(), action)
		}
		o, err := wire.Decapsulate(out[14:])
		must(t, err)
		if want := table.Servers[table.MCT[sig]].Addr; o.Dst != want {
			t.Errorf("%v: to %v, want %v (MCT entry %s): the BPF signature differs from the vector", pv.Flow(), o.Dst, want, pv.Sig)
		}
	}
}

// TestPrismMPTCPSubflows: an MPTCP secondary subflow's destination port
// names its server (the agent advertised VIP:server-id); under Prism, as
// under beamer, the mux sends it there whatever the bins and the MCT say,
// so a subflow joins the connection on the server that holds it.
func TestPrismMPTCPSubflows(t *testing.T) {
	r := newPrismRig(t)
	n := 0
	for id, s := range r.table.Servers {
		f := r.flow(42000 + uint16(n))
		f.DstPort = uint16(id)
		for _, flags := range []int{wiretest.SYN, wiretest.ACK} {
			if got, c := r.send(f, flags); got != s.Addr || c != "fwd_server_id" {
				t.Fatalf("subflow to port %d: to %v (%s), want server %d %v", id, got, c, id, s.Addr)
			}
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%d servers: the test needs several", n)
	}
}
