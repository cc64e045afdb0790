package dataplane

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// Block summaries (bpf/include/mux_maps.h): a table of summaryMinBuckets
// buckets or more answers most packets from one 16-bit summary per block of
// 256 buckets. These tests grow the vector scenario's instance to 65,536
// buckets in contiguous ranges, as the controller keeps them.

const largeBuckets = 1 << 16

// largeVectorMux loads the vector scenario's mux with its instance grown
// to largeBuckets buckets, owned in contiguous ranges by owners.
func largeVectorMux(t *testing.T, owners []forwarding.ServerID) (*wiretest.Vectors, *Mux, *muxBench, forwarding.Instance, *forwarding.Table) {
	v, m, inst, table := loadVectorMuxAs(t, func(inst *forwarding.Instance, table **forwarding.Table) {
		small := *table
		inst.Buckets = largeBuckets
		*table = forwarding.NewTable(largeBuckets)
		(*table).Generation, (*table).Incarnation, (*table).Servers = small.Generation, small.Incarnation, small.Servers
		for i := range (*table).Buckets {
			(*table).Buckets[i] = forwarding.Bucket{Current: rangeOwner(owners, i)}
		}
	})
	return v, m, newMuxBench(t, &v.Mux), inst, table
}

// rangeOwner is the owner of bucket i when owners share the table in
// contiguous ranges.
func rangeOwner(owners []forwarding.ServerID, i int) forwarding.ServerID {
	return owners[i*len(owners)/largeBuckets]
}

// flowsByBucket finds a client flow to vip:80 for every bucket it can in
// n tries.
func flowsByBucket(vip netip.Addr, n int) map[uint32]wire.Flow {
	out := map[uint32]wire.Flow{}
	for i := range n {
		f := wire.Flow{Src: netip.AddrFrom4([4]byte{198, 18, 200, byte(i)}), Dst: vip, SrcPort: uint16(1024 + i>>8), DstPort: 80, Proto: wire.ProtoTCP}
		b := f.Bucket(largeBuckets)
		if _, ok := out[b]; !ok {
			out[b] = f
		}
	}
	return out
}

// checkSummaries: every set summary names the owner of all its block's
// buckets, none with history; returns how many blocks are summarised.
func checkSummaries(t *testing.T, m *Mux) int {
	t.Helper()
	a := m.instances["web"].buckets
	if a.s == 0 {
		t.Fatalf("a table of %d buckets has no summaries", a.b)
	}
	set := 0
	for block := range blocksOf(a.b) {
		s := a.summary(block)
		if s == 0 {
			continue
		}
		set++
		first := block << summaryShift
		for i := first; i < min(first+1<<summaryShift, a.b); i++ {
			if e := a.entry(i); e != s {
				t.Fatalf("block %d summarised as %d, its bucket %d has entry %d", block, s, i, e)
			}
		}
	}
	return set
}

// TestMuxSummariesMatchModel: random deltas move single buckets (with and
// without histories), put them back, and hand whole runs of buckets to
// another owner; after each, the moved buckets, their block neighbours and
// random flows go through the XDP mux and the model, which knows nothing
// of summaries: same action, same bytes.
func TestMuxSummariesMatchModel(t *testing.T) {
	active := []forwarding.ServerID{1025, 1026, 1027, 1028, 1029, 1030}
	all := append(append([]forwarding.ServerID(nil), active...), 1031)
	v, m, b, inst, table := largeVectorMux(t, active)
	blocks := int(blocksOf(largeBuckets))
	if set := checkSummaries(t, m); set < blocks-len(active) {
		t.Fatalf("%d of %d blocks summarised after loading %d contiguous ranges", set, blocks, len(active))
	}
	vip := inst.VIPs[0]
	mm := &model.Mux{Addr: v.Mux.MuxAddr, NextHops: modelNextHops(v.Mux.NextHops),
		VIPs: map[netip.Addr]*model.VIP{vip: {Instance: inst, Table: table, Generation: table.Generation, Incarnation: table.Incarnation}}}
	flows := flowsByBucket(vip, 1<<20)
	rng := rand.New(rand.NewPCG(11, 11))
	send := func(f wire.Flow) {
		t.Helper()
		seg := wiretest.Segment{Flow: f, Flags: wiretest.ACK, Seq: rng.Uint32(), Ack: rng.Uint32(), IPID: uint16(rng.Uint32())}
		frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4())
		want := mm.Process(frame)
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		if action != string(want.Action) {
			t.Fatalf("generation %d, bucket %d: XDP %s, model %s/%s", table.Generation, f.Bucket(largeBuckets), action, want.Action, want.Counter)
		}
		if want.Action != model.Drop && !bytes.Equal(out[:len(want.Output)], want.Output) {
			t.Fatalf("generation %d, bucket %d: output differs\n got %x\nwant %x", table.Generation, f.Bucket(largeBuckets), out[:len(want.Output)], want.Output)
		}
	}
	sent, moved := 0, []uint32{}
	for range 120 {
		d := &forwarding.Delta{Generation: table.Generation + 1}
		change := func(i uint32, bk forwarding.Bucket) {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: i, Bucket: bk})
		}
		switch k := rng.IntN(4); {
		case k == 0 && len(moved) > 0: // put moved buckets back: their blocks become one owner's again
			for _, i := range moved {
				change(i, forwarding.Bucket{Current: rangeOwner(active, int(i))})
			}
			moved = moved[:0]
		case k == 1: // a run of buckets, often whole blocks, to another owner without history
			first := rng.Uint32N(largeBuckets - 1024)
			owner := active[rng.IntN(len(active))]
			for i := first; i < first+256+rng.Uint32N(768); i++ {
				change(i, forwarding.Bucket{Current: owner})
			}
		default: // single buckets, with random histories
			for range 1 + rng.IntN(3) {
				i := rng.Uint32N(largeBuckets)
				change(i, randomMovedBucket(rng, active, all))
				moved = append(moved, i)
			}
		}
		must(t, m.ApplyDelta("web", d))
		must(t, table.Apply(d))
		mm.VIPs[vip].Table, mm.VIPs[vip].Generation = table, table.Generation
		// The changed buckets (a long run: its ends), their block's first
		// and last buckets and their neighbours, and random flows.
		probe := map[uint32]bool{}
		for _, c := range []int{0, len(d.Buckets) - 1} {
			i := d.Buckets[c].Index
			block := i >> summaryShift << summaryShift
			for _, j := range []uint32{i, i - 1, i + 1, block, block + 1<<summaryShift - 1} {
				probe[j%largeBuckets] = true
			}
		}
		for range 4 {
			probe[rng.Uint32N(largeBuckets)] = true
		}
		for i := range probe {
			if f, ok := flows[i]; ok {
				send(f)
				sent++
			}
		}
	}
	set := checkSummaries(t, m)
	t.Logf("%d packets through %d generations, same bytes as the model; %d of %d blocks summarised at the end", sent, 120, set, blocks)
	if set == 0 {
		t.Fatal("no block summarised at the end: the packets never took the summary path")
	}
}

// TestMuxSummaryNeverNewer: while a writer hands a whole block to the next
// of four owners every generation (and every third generation gives one of
// its buckets a history, so the block is not one owner's), packets on
// another bucket of the block go to an owner of a generation between the
// one they carry and the newest written — a summary is never newer than
// the entries it stands for, and the generation never newer than the
// bucket.
func TestMuxSummaryNeverNewer(t *testing.T) {
	owners := []forwarding.ServerID{1025, 1026, 1027, 1028}
	_, m, b, inst, table := largeVectorMux(t, owners)
	const block = 100
	var target wire.Flow
	var odd uint32
	for i, f := range flowsByBucket(inst.VIPs[0], 1<<20) {
		if i>>summaryShift == block && i&1 == 0 {
			target, odd = f, i+1
			break
		}
	}
	if !target.Src.IsValid() {
		t.Fatal("no flow found for the block")
	}
	initial := table.Generation
	ownerOf := func(g uint32) forwarding.ServerID {
		if g == initial {
			return rangeOwner(owners, block<<summaryShift) // as loaded
		}
		return owners[g%4]
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for g := table.Generation + 1; !stop.Load() && g < 100000; g++ {
			d := &forwarding.Delta{Generation: g}
			for i := uint32(block << summaryShift); i < (block+1)<<summaryShift; i++ {
				bk := forwarding.Bucket{Current: ownerOf(g)}
				if i == odd && g%3 == 0 {
					bk.History, bk.Changed = forwarding.Chain{ownerOf(g - 1)}, 1_763_000_000+g
				}
				d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: i, Bucket: bk})
			}
			if err := m.ApplyDelta("web", d); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seg := wiretest.Segment{Flow: target, Flags: wiretest.ACK, Seq: 1, Ack: 1}
	in := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4())
	checked := 0
	for range 20000 {
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), in)
		newest, _ := m.Generation("web") // waits for a delta being written
		if action != "tx" && action != "redirect" {
			t.Fatalf("packet %s", action)
		}
		o, err := wire.Decapsulate(out[14:])
		must(t, err)
		g := o.Option.Generation
		if newest+1-g >= 4 {
			continue // four or more generations apart: any owner fits
		}
		checked++
		ok := false
		for c := g; c <= newest+1; c++ { // newest+1: written, not yet published
			ok = ok || table.Servers[ownerOf(c)].Addr == o.Dst
		}
		if !ok {
			t.Fatalf("packet of generation %d went to %v, owner of no generation from %d to %d", g, o.Dst, g, newest+1)
		}
	}
	stop.Store(true)
	wg.Wait()
	newest, _ := m.Generation("web")
	t.Logf("%d of 20000 packets checked while %d generations were applied", checked, newest-table.Generation)
	if checked < 1000 {
		t.Fatalf("only %d packets close enough to the newest generation to check", checked)
	}
}
