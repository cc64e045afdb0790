package dataplane

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// forwardedBy runs a vectors case's input through the mux and decodes where
// it went: the outer destination and the option.
func forwardedBy(t *testing.T, b *muxBench, m *Mux, input string) (string, wire.Outer) {
	t.Helper()
	in, _ := hex.DecodeString(input)
	action, out := runXDP(t, b.ns, b.ifindex, m.Program(), in)
	if action != "tx" && action != "redirect" {
		return action, wire.Outer{}
	}
	o, err := wire.Decapsulate(out[14:])
	must(t, err)
	return action, o
}

func caseNamed(t *testing.T, v *wiretest.Vectors, name string) string {
	for _, c := range v.Mux.Cases {
		if c.Name == name {
			return c.Input
		}
	}
	t.Fatalf("no vector %q", name)
	return ""
}

// TestMuxApplyDelta moves a bucket by a delta, checks the packet follows with
// the new previous owner and generation, and that bad deltas change nothing.
func TestMuxApplyDelta(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	syn := caseNamed(t, v, "syn to bucket owned by on-link server") // bucket 0, owner 1025

	_, o := forwardedBy(t, b, m, syn)
	if o.Dst != netip.MustParseAddr("198.18.0.10") || o.Option.Generation != 7 || len(o.Option.Prev) != 0 {
		t.Fatalf("before delta: to %v with %+v", o.Dst, o.Option)
	}

	d := &forwarding.Delta{Generation: 8, Buckets: []forwarding.BucketChange{
		{Index: 0, Bucket: forwarding.Bucket{Current: 1026, History: forwarding.Chain{1025}, Changed: 1763700500}}}}
	must(t, m.ApplyDelta("web", d))
	_, o = forwardedBy(t, b, m, syn)
	if o.Dst != netip.MustParseAddr("198.18.0.11") || o.Option.Generation != 8 ||
		len(o.Option.Prev) != 1 || o.Option.Prev[0] != netip.MustParseAddr("198.18.0.10") || o.Option.Changed != 1763700500 {
		t.Fatalf("after delta: to %v with %+v", o.Dst, o.Option)
	}
	if g, _ := m.Generation("web"); g != 8 {
		t.Fatalf("generation %d, want 8", g)
	}

	bad := []*forwarding.Delta{
		{Generation: 10, Buckets: []forwarding.BucketChange{{Index: 0, Bucket: forwarding.Bucket{Current: 1025}}}}, // skips 9
		{Generation: 9, Buckets: []forwarding.BucketChange{{Index: 16, Bucket: forwarding.Bucket{Current: 1025}}}}, // no bucket 16
		{Generation: 9, Buckets: []forwarding.BucketChange{{Index: 0, Bucket: forwarding.Bucket{Current: 2000}}}},  // unknown server
		{Generation: 9, Servers: []forwarding.ServerChange{{ID: 1025, Remove: true}}},                              // still owns buckets
		{Generation: 9, Buckets: []forwarding.BucketChange{{Index: 1, Bucket: forwarding.Bucket{Current: 1031}}}},  // retired owner
		{Generation: 9, Servers: []forwarding.ServerChange{{ID: 80, Server: forwarding.Server{Addr: netip.MustParseAddr("198.18.0.9"), State: forwarding.Active}}}},
	}
	for i, d := range bad {
		if err := m.ApplyDelta("web", d); !errors.Is(err, forwarding.ErrGeneration) && !errors.Is(err, forwarding.ErrInvalid) {
			t.Errorf("bad delta %d accepted or wrong error: %v", i, err)
		}
		_, o = forwardedBy(t, b, m, syn)
		if o.Dst != netip.MustParseAddr("198.18.0.11") || o.Option.Generation != 8 {
			t.Fatalf("bad delta %d changed forwarding: to %v with %+v", i, o.Dst, o.Option)
		}
	}
	if err := m.ApplyDelta("nope", d); !errors.Is(err, ErrUnknownInstance) {
		t.Errorf("delta to unknown instance: %v", err)
	}

	// A server added and given a bucket in one delta; then a full reload.
	d = &forwarding.Delta{Generation: 9,
		Servers: []forwarding.ServerChange{{ID: 1040, Server: forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}}},
		Buckets: []forwarding.BucketChange{{Index: 0, Bucket: forwarding.Bucket{Current: 1040}}}}
	must(t, m.ApplyDelta("web", d))
	_, o = forwardedBy(t, b, m, syn)
	if o.Dst != netip.MustParseAddr("198.18.0.10") || o.Option.Generation != 9 || len(o.Option.Prev) != 0 {
		t.Fatalf("after add: to %v with %+v", o.Dst, o.Option)
	}
	table, err := v.Mux.Table()
	must(t, err)
	table.Generation = 20
	table.Buckets[0] = forwarding.Bucket{Current: 1026}
	must(t, m.SetInstance(v.Mux.Instance, table))
	_, o = forwardedBy(t, b, m, syn)
	if o.Dst != netip.MustParseAddr("198.18.0.11") || o.Option.Generation != 20 {
		t.Fatalf("after reload: to %v with %+v", o.Dst, o.Option)
	}
	if n := countUsedSlots(m); n != 1 {
		t.Fatalf("%d table slots in use after reload, want 1", n)
	}
	must(t, m.RemoveInstance("web"))
	if a, _ := forwardedBy(t, b, m, syn); a != "pass" {
		t.Fatalf("after removal the VIP's packet was %s, want pass", a)
	}
}

func countUsedSlots(m *Mux) int {
	n := 0
	for _, u := range m.slots {
		if u {
			n++
		}
	}
	return n
}

// TestMuxNeverTorn updates one bucket as fast as the daemon can while packets
// are forwarding, and checks that every packet saw a whole bucket, its whole
// history, and a generation no newer than the bucket's content. Every third
// generation prunes the history, so the bucket flips between its compact
// entry alone and its side word (bpf/include/mux_maps.h). Each
// generation g sets the bucket's change time to base+g, so the option shows
// which content forwarded the packet. Histories cycle through 38 distinct
// lists, more than the instance's chain table holds (2B+1 = 33), so chain
// slots are freed and reused while packets run.
func TestMuxNeverTorn(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	syn := caseNamed(t, v, "syn to bucket owned by on-link server")
	const base = 1763000000
	owners := [2]struct {
		cur, prev forwarding.ServerID
		addr      netip.Addr
	}{{1025, 1026, netip.MustParseAddr("198.18.0.10")}, {1026, 1025, netip.MustParseAddr("198.18.0.11")}}
	older := func(g uint32) forwarding.ServerID { return 1040 + forwarding.ServerID(g%19) }
	olderAddr := func(id forwarding.ServerID) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 1, byte(id - 1000)}) }
	add := &forwarding.Delta{Generation: 8}
	for id := forwarding.ServerID(1040); id < 1059; id++ {
		add.Servers = append(add.Servers, forwarding.ServerChange{ID: id, Server: forwarding.Server{Addr: olderAddr(id), State: forwarding.Active}})
	}
	must(t, m.ApplyDelta("web", add))

	var stop atomic.Bool
	var wg sync.WaitGroup
	// Registered after the mux's cleanup, so it runs before it: a failing
	// check must not unmap the tables under the writer.
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for g := uint32(9); !stop.Load() && g < 200000; g++ {
			o := owners[g%2]
			bk := forwarding.Bucket{Current: o.cur, History: forwarding.Chain{o.prev, older(g)}, Changed: base + g}
			if g%3 == 0 {
				// Its history pruned: back to a compact entry alone.
				bk = forwarding.Bucket{Current: o.cur}
			}
			d := &forwarding.Delta{Generation: g, Buckets: []forwarding.BucketChange{{Index: 0, Bucket: bk}}}
			if err := m.ApplyDelta("web", d); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	packets := 0
	for ; packets < 20000; packets++ {
		_, o := forwardedBy(t, b, m, syn)
		if o.Option == nil {
			t.Fatal("packet not forwarded by bucket")
		}
		if o.Option.Changed == 0 {
			// The vectors' initial content (generation 7), or a bucket
			// whose history was pruned (its entry alone).
			if len(o.Option.Prev) != 0 || o.Dst != owners[0].addr && o.Dst != owners[1].addr {
				t.Fatalf("torn bucket without history: to %v, option %+v", o.Dst, o.Option)
			}
			continue
		}
		content := o.Option.Changed - base
		if content%3 == 0 {
			t.Fatalf("packet forwarded with the history of generation %d, which has none", content)
		}
		prev := owners[(content+1)%2].addr
		if len(o.Option.Prev) != 2 || o.Option.Prev[0] != prev || o.Option.Prev[1] != olderAddr(older(content)) || owners[content%2].addr != o.Dst {
			t.Fatalf("torn bucket: to %v, option %+v (content of generation %d)", o.Dst, o.Option, content)
		}
		if o.Option.Generation > content {
			t.Fatalf("packet carries generation %d but was forwarded by content of generation %d", o.Option.Generation, content)
		}
	}
	stop.Store(true)
	wg.Wait()
	g, _ := m.Generation("web")
	used, size, overflow, _ := m.ChainStats("web")
	t.Logf("%d packets forwarded while %d generations were applied; chain table %d/%d used, %d overflows", packets, g-7, used, size, overflow)
	if overflow != 0 {
		t.Errorf("chain table overflowed %d times with 2 histories named at once", overflow)
	}
}
