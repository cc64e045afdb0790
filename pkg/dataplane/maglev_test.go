package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/cilium/ebpf"
)

// maglevRig is a Maglev-strategy mux on the vectors' bench network.
type maglevRig struct {
	t     *testing.T
	m     *Mux
	bench *muxBench
	table *forwarding.Table
	vip   netip.Addr
}

func newMaglevRig(t *testing.T, opts MuxOptions) *maglevRig {
	v, err := wiretest.LoadVectors()
	must(t, err)
	opts.Addr = v.Maglev.MuxAddr
	m, err := LoadMux(opts)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	must(t, m.SetInstance(v.Maglev.Instance, table))
	return &maglevRig{t: t, m: m, bench: newMuxBench(t, &v.Mux), table: table, vip: v.Maglev.Instance.VIPs[0]}
}

func (r *maglevRig) flow(port uint16) wire.Flow {
	return wire.Flow{Src: netip.MustParseAddr("198.18.200.9"), Dst: r.vip, SrcPort: port, DstPort: 80, Proto: wire.ProtoTCP}
}

// send forwards one segment and returns where it went and which counter moved.
func (r *maglevRig) send(f wire.Flow, flags int) (netip.Addr, string) {
	r.t.Helper()
	before, err := r.m.Counters()
	must(r.t, err)
	frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{Flow: f, Flags: flags}.IPv4())
	action, out := runXDP(r.t, r.bench.ns, r.bench.ifindex, r.m.Program(), frame)
	after, err := r.m.Counters()
	must(r.t, err)
	moved := ""
	for _, c := range []string{"ct_hit", "ct_miss", "ct_syn", "ct_stale"} {
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
		r.t.Fatalf("maglev packet carries a Beamer option")
	}
	return o.Dst, moved
}

// apply publishes the next generation of the rig's table.
func (r *maglevRig) apply(d *forwarding.Delta) {
	r.t.Helper()
	d.Generation = r.table.Generation + 1
	must(r.t, r.table.Apply(d))
	must(r.t, r.m.ApplyDelta("shop", d))
}

// TestMaglevConnectionTable: a remembered connection keeps its server when
// the table changes under it, until that server stops being active; new
// connections follow the table.
func TestMaglevConnectionTable(t *testing.T) {
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 4096})
	f := r.flow(41000)
	first, c := r.send(f, wiretest.SYN)
	if c != "ct_syn" {
		t.Fatalf("SYN counted as %q", c)
	}
	bucket := f.Bucket(uint32(len(r.table.Buckets)))
	owner := r.table.Buckets[bucket].Current
	other := forwarding.ServerID(1025)
	if other == owner {
		other = 1026
	}
	r.apply(&forwarding.Delta{Buckets: []forwarding.BucketChange{{Index: bucket, Bucket: forwarding.Bucket{Current: other}}}})
	if got, c := r.send(f, wiretest.ACK); got != first || c != "ct_hit" {
		t.Fatalf("known connection after a table change: to %v (%s), want %v by ct_hit", got, c, first)
	}
	if got, c := r.send(f, wiretest.SYN); got != r.table.Servers[other].Addr || c != "ct_syn" {
		t.Fatalf("SYN reusing the tuple: to %v (%s), want the table's new entry", got, c)
	}

	// Retire the remembered server (removed from the table, draining): its
	// connections stay; then it fails its health checks: they are chosen again.
	g := r.flow(41001)
	gb := g.Bucket(uint32(len(r.table.Buckets)))
	was, _ := r.send(g, wiretest.SYN)
	id := r.table.Buckets[gb].Current
	d := &forwarding.Delta{Servers: []forwarding.ServerChange{{ID: id, Server: forwarding.Server{Addr: r.table.Servers[id].Addr, State: forwarding.Retired}}}}
	repl := forwarding.ServerID(1025)
	if repl == id {
		repl = 1027
	}
	for i, b := range r.table.Buckets {
		if b.Current == id {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: repl}})
		}
	}
	r.apply(d)
	if got, c := r.send(g, wiretest.ACK); got != was || c != "ct_hit" {
		t.Fatalf("connection of a retired (draining) server: to %v (%s), want %v by ct_hit", got, c, was)
	}
	r.apply(&forwarding.Delta{Servers: []forwarding.ServerChange{{ID: id, Server: forwarding.Server{Addr: r.table.Servers[id].Addr, State: forwarding.Down}}}})
	if got, c := r.send(g, wiretest.ACK); got == was || c != "ct_stale" {
		t.Fatalf("connection of a down server: to %v (%s), want another server by ct_stale", got, c)
	}
	if got, c := r.send(g, wiretest.ACK); got != r.table.Servers[repl].Addr || c != "ct_hit" {
		t.Fatalf("after re-choosing: to %v (%s)", got, c)
	}
}

// TestMaglevTableFull: a full connection table forgets its oldest entries.
// Four buckets of four slots and 300 one-packet connections: each bucket
// sees ~75, each new one replaces one of the untouched entries, so the
// first is gone (it survives with probability ~(3/4)^70).
func TestMaglevTableFull(t *testing.T) {
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 4})
	if c := r.m.ConnTrackCapacity(); c != 16 {
		t.Fatalf("capacity %d, want 16 (4 buckets of 4)", c)
	}
	for p := uint16(0); p < 300; p++ {
		r.send(r.flow(42000+p), wiretest.SYN)
	}
	n, err := r.m.ConnTrackEntries()
	must(t, err)
	if n != 16 {
		t.Fatalf("%d entries remembered, want all 16 slots used", n)
	}
	// The newest first: a miss is remembered again in place of an
	// untouched entry of its bucket, which the newest connection is until
	// a packet of it is seen (its table's seed is random: the two may
	// share a bucket).
	if _, c := r.send(r.flow(42299), wiretest.ACK); c != "ct_hit" {
		t.Fatalf("newest connection: %s, want ct_hit", c)
	}
	if _, c := r.send(r.flow(42000), wiretest.ACK); c != "ct_miss" {
		t.Fatalf("oldest connection after 300 new ones: %s, want ct_miss (evicted)", c)
	}
}

// TestMaglevFloodGuard: past the new-connection cap, connections are still
// forwarded by the table but not remembered, and the guard counts them.
func TestMaglevFloodGuard(t *testing.T) {
	cpus, err := ebpf.PossibleCPU()
	must(t, err)
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 4096, MaxNewConnsPerSecond: uint64(5 * cpus)})
	before, err := r.m.Counters()
	must(t, err)
	for p := uint16(0); p < 10; p++ {
		r.send(r.flow(43000+p), wiretest.SYN)
	}
	after, err := r.m.Counters()
	must(t, err)
	if d := after["ct_flood"] - before["ct_flood"]; d != 5 {
		t.Fatalf("flood guard refused %d inserts, want 5 of 10 at 5 per CPU-second", d)
	}
	if _, c := r.send(r.flow(43000), wiretest.ACK); c != "ct_hit" {
		t.Fatalf("connection inserted before the cap: %s", c)
	}
	if _, c := r.send(r.flow(43009), wiretest.ACK); c != "ct_miss" {
		t.Fatalf("connection refused by the guard: %s, want ct_miss", c)
	}
}
