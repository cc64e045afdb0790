package dataplane

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// awfdRig is an awfd-strategy mux on the vectors' bench network: the
// Maglev vectors' instance and table, run as AWFD.
type awfdRig struct {
	*maglevRig
	cfg forwarding.Instance
}

func newAWFDRig(t *testing.T) *awfdRig {
	v, err := wiretest.LoadVectors()
	must(t, err)
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr, ConnTrackEntries: 4096})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	cfg := v.Maglev.Instance
	cfg.Strategy = forwarding.StrategyAWFD
	cfg.AWFD = &forwarding.AWFDOptions{Classes: 4}
	must(t, m.SetInstance(cfg, table))
	return &awfdRig{maglevRig: &maglevRig{t: t, m: m, bench: newMuxBench(t, &v.Mux), table: table, vip: cfg.VIPs[0]}, cfg: cfg}
}

func (r *awfdRig) counters() map[string]uint64 {
	c, err := r.m.CountersOf(forwarding.StrategyAWFD)
	must(r.t, err)
	return c
}

func (r *awfdRig) addr(id forwarding.ServerID) netip.Addr { return r.table.Servers[id].Addr }

func (r *awfdRig) record(seq uint64, weights map[forwarding.ServerID]int) *classes.Record {
	var ids []forwarding.ServerID
	for id := range r.table.Servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w := make([]int, len(ids))
	for i, id := range ids {
		w[i] = weights[id]
	}
	rec, err := classes.Build(seq, 0, 4, ids, w)
	must(r.t, err)
	return rec
}

// TestAWFDMux runs real segments through the mux program: without a record
// new connections follow the Maglev table; with one, each SYN goes where
// Go's Algorithm 1 says for the packet's flow hash; an established
// connection keeps its server when the record changes (connection table);
// a record naming a server the ring marks down is not followed for it; an
// older record is refused; a table reload keeps the record.
func TestAWFDMux(t *testing.T) {
	r := newAWFDRig(t)
	var ids []forwarding.ServerID
	for id := range r.table.Servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) < 3 {
		t.Fatalf("vectors have %d servers, need 3", len(ids))
	}

	// No record: the Maglev table.
	f := r.flow(42000)
	dst, _ := r.send(f, wiretest.SYN)
	want := r.addr(r.table.Buckets[f.Bucket(uint32(len(r.table.Buckets)))].Current)
	if dst != want || r.counters()["no_record"] != 1 {
		t.Fatalf("no record: sent to %v, Maglev table says %v; counters %v", dst, want, r.counters())
	}

	// One server alone in a class: every new connection goes to it.
	only := ids[1]
	must(t, awfd.SetRecord(r.m.WithInstance, r.cfg.Name, r.record(10, map[forwarding.ServerID]int{only: 4})))
	for p := uint16(43000); p < 43040; p++ {
		if dst, _ := r.send(r.flow(p), wiretest.SYN); dst != r.addr(only) {
			t.Fatalf("flow %d went to %v, the record names only %v", p, dst, r.addr(only))
		}
	}

	// Several classes: each SYN where Go's selection says.
	rec := r.record(11, map[forwarding.ServerID]int{ids[0]: 4, ids[1]: 1, ids[2]: 2})
	must(t, awfd.SetRecord(r.m.WithInstance, r.cfg.Name, rec))
	seen := map[netip.Addr]int{}
	for p := uint16(44000); p < 44200; p++ {
		fl := r.flow(p)
		dst, _ := r.send(fl, wiretest.SYN)
		if want := r.addr(rec.Select(fl.Hash())); dst != want {
			t.Fatalf("flow %d: C sent to %v, Go picks %v", p, dst, want)
		}
		seen[dst]++
	}
	if len(seen) != 3 || seen[r.addr(ids[0])] <= seen[r.addr(ids[1])] {
		t.Fatalf("spread %v: want all three, the weight-4 server above the weight-1", seen)
	}

	// PCC: a connection placed on ids[0] keeps it after the record moves
	// every new connection elsewhere.
	var pinned wire.Flow
	for p := uint16(45000); ; p++ {
		if rec.Select(r.flow(p).Hash()) == ids[0] {
			pinned = r.flow(p)
			break
		}
	}
	r.send(pinned, wiretest.SYN)
	must(t, awfd.SetRecord(r.m.WithInstance, r.cfg.Name, r.record(12, map[forwarding.ServerID]int{ids[2]: 4})))
	// A retransmitted SYN keeps the first SYN's server although the record
	// now sends every new connection elsewhere.
	if dst, c := r.send(pinned, wiretest.SYN); dst != r.addr(ids[0]) || c != "ct_hit" {
		t.Fatalf("retransmitted SYN went to %v (%s), want %v: the handshake would be reset", dst, c, r.addr(ids[0]))
	}
	for i := 0; i < 5; i++ {
		if dst, c := r.send(pinned, wiretest.ACK); dst != r.addr(ids[0]) || c != "ct_hit" {
			t.Fatalf("established connection went to %v (%s) after the record changed, want %v", dst, c, r.addr(ids[0]))
		}
	}
	if r.counters()["ct_hit"] < 5 {
		t.Fatalf("counters %v", r.counters())
	}

	// The record names ids[2] alone, but the ring marks it down: new
	// connections fall back to the table, never to the down server.
	down := &forwarding.Delta{Servers: []forwarding.ServerChange{{ID: ids[2], Server: forwarding.Server{Addr: r.addr(ids[2]), State: forwarding.Down}}}}
	for i, b := range r.table.Buckets {
		if b.Current == ids[2] {
			down.Buckets = append(down.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: ids[0]}})
		}
	}
	r.apply(down)
	before := r.counters()["not_active"]
	for p := uint16(46000); p < 46020; p++ {
		if dst, _ := r.send(r.flow(p), wiretest.SYN); dst == r.addr(ids[2]) {
			t.Fatalf("flow %d sent to the down server", p)
		}
	}
	if r.counters()["not_active"] != before+20 {
		t.Fatalf("not_active %d → %d, want +20", before, r.counters()["not_active"])
	}

	// An older record (a delayed write) is refused; the running one stays.
	if err := awfd.SetRecord(r.m.WithInstance, r.cfg.Name, r.record(5, map[forwarding.ServerID]int{ids[0]: 4})); !errors.Is(err, awfd.ErrOldRecord) {
		t.Fatalf("older record: %v", err)
	}
	if got := awfd.RecordOf(r.m.WithInstance, r.cfg.Name); got.Seq != 12 {
		t.Fatalf("running record seq %d, want 12", got.Seq)
	}

	// A whole-table reload (new slot) keeps dispatching by the record.
	must(t, awfd.SetRecord(r.m.WithInstance, r.cfg.Name, r.record(13, map[forwarding.ServerID]int{only: 4})))
	t2 := r.table.Clone()
	t2.Generation++
	must(t, r.m.SetInstance(r.cfg, t2))
	r.table = t2
	for p := uint16(47000); p < 47020; p++ {
		if dst, _ := r.send(r.flow(p), wiretest.SYN); dst != r.addr(only) {
			t.Fatalf("after a reload, flow %d went to %v, want %v", p, dst, r.addr(only))
		}
	}

	// A record for a non-AWFD or unknown instance is refused.
	if err := awfd.SetRecord(r.m.WithInstance, "nope", rec); err == nil {
		t.Fatal("record for an unknown instance accepted")
	}
}
