package controller

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// seedInstance writes an instance with n active DIPs owning 100 contiguous
// buckets each, directly (adding 64 000 DIPs one by one would take the
// benchmark's whole budget): DIP and id records, and one generation.
func seedInstance(b *testing.B, root string, n int) {
	ctx := storetest.Context(b)
	in := webInstance(uint32(n*100 + 100*64))
	k := ring.InstanceKeys(root, "web")
	w, err := ring.Create(ctx, shared, k, in, ring.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d := &forwarding.Delta{Generation: 1}
	var ops []store.Op
	for i := range n {
		id := forwarding.ServerID(1025 + i)
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		d.Servers = append(d.Servers, forwarding.ServerChange{ID: id, Server: forwarding.Server{Addr: addr, State: forwarding.Active}})
		for j := range 100 {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i*100 + j), Bucket: forwarding.Bucket{Current: id}})
		}
		ops = append(ops, putDIP(&DIP{ID: id, Addr: addr, Weight: 1, State: Active}, k), putID(k, id, idRecord{Addr: addr, State: "active"}))
	}
	// The spare 64×100 buckets go round-robin, as the greedy loop would leave them.
	for j := n * 100; j < len(w.Table().Buckets); j++ {
		d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(j), Bucket: forwarding.Bucket{Current: forwarding.ServerID(1025 + j%n)}})
	}
	if _, err := w.Publish(ctx, d); err != nil {
		b.Fatal(err)
	}
	for len(ops) > 0 {
		m := min(len(ops), 100)
		if err := shared.Commit(ctx, ops[:m]...); err != nil {
			b.Fatal(err)
		}
		ops = ops[m:]
	}
}

// BenchmarkAddDIP measures one add-DIP operation on an instance of 1 K,
// 10 K and 64 K DIPs with 100 buckets per DIP (the paper's §6.4 scale):
// the controller's time (record, greedy rebalance, encode, store the delta,
// move the pointer), the stored bytes of the generation, and the time a
// mux takes to read, verify and apply it.
func BenchmarkAddDIP(b *testing.B) {
	for _, n := range []int{1000, 10000, 64000} {
		b.Run(fmt.Sprintf("dips=%d", n), func(b *testing.B) {
			root := newRoot()
			seedInstance(b, root, n)
			ctx := storetest.Context(b)
			c := New(shared, root, Options{Ring: ring.WriterOptions{BlobEvery: 1 << 30}})
			if err := c.Recover(ctx); err != nil { // loads records and ring
				b.Fatal(err)
			}
			f := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{})
			mux, _, err := f.Load(ctx)
			if err != nil {
				b.Fatal(err)
			}
			app := &applier{table: mux}
			next := forwarding.ServerID(1025 + n)
			var bytes, applyNs, moved float64
			b.ResetTimer()
			for b.Loop() {
				if next == forwarding.MaxServerID {
					b.Fatal("out of server ids: lower -benchtime")
				}
				if err := c.AddDIP(ctx, "web", next, netip.AddrFrom4([4]byte{11, 0, byte(next >> 8), byte(next)}), 1); err != nil {
					b.Fatal(err)
				}
				next++
				b.StopTimer()
				st, err := f.CatchUp(ctx, app)
				if err != nil {
					b.Fatal(err)
				}
				bytes += float64(st.Bytes)
				applyNs += float64(st.Duration.Nanoseconds())
				moved += float64(st.Buckets)
				b.StartTimer()
			}
			iters := float64(b.N)
			b.ReportMetric(bytes/iters, "gen-bytes")
			b.ReportMetric(moved/iters, "buckets-moved")
			b.ReportMetric(applyNs/iters, "mux-apply-ns")
		})
	}
}

type applier struct{ table *forwarding.Table }

func (a *applier) ApplyDelta(d *forwarding.Delta) error { return a.table.Apply(d) }
func (a *applier) Replace(t *forwarding.Table) error    { a.table = t; return nil }
