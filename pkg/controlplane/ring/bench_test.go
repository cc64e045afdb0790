package ring

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// paperTable is the paper's largest instance (§6.4): servers DIPs with 100
// buckets each, in contiguous ranges, at generation gen.
func paperTable(servers int, gen uint32) *forwarding.Table {
	t := forwarding.NewTable(servers * 100)
	t.Generation = gen
	for i := range servers {
		id := forwarding.ServerID(1025 + i)
		t.Servers[id] = forwarding.Server{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), State: forwarding.Active}
		for b := i * 100; b < (i+1)*100; b++ {
			t.Buckets[b] = forwarding.Bucket{Current: id, Changed: 1_700_000_000}
		}
	}
	return t
}

// BenchmarkColdStart measures a mux cold start at 6.4 M buckets (64 000
// DIPs × 100): the latest blob, then 16 add-DIP deltas (each new DIP takes
// one bucket from each of 100 DIPs, as the greedy loop does).
func BenchmarkColdStart(b *testing.B) {
	const servers, deltas = 64000, 16
	k := InstanceKeys("/bench-coldstart", "web")
	ctx := storetest.Context(b)
	st := storetest.EmbeddedT(b)
	tab := paperTable(servers, 1)
	obj, err := encodeObject(meta{kind: KindBlob, generation: 1}, blobBytes(tab), 1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := writeObject(ctx, st, k.objectDir(1, KindBlob), obj, st.MaxValueSize()); err != nil {
		b.Fatal(err)
	}
	w := &Writer{st: st, k: k, table: tab, ptr: pointers{gen: Pair{Generation: 1}, blob: Pair{Generation: 1}}}
	w.opts.fill(st)
	w.opts.BlobEvery = 1 << 30
	w.blobBytes = 1 << 40 // deltas only
	cfg, _ := json.Marshal(testInstance("web", uint32(len(tab.Buckets))))
	if err := st.Commit(ctx, store.Put(k.Config(), cfg), store.Put(k.LatestBlob(), formatPointer(Pair{Generation: 1})), store.Put(k.LatestGen(), formatPointer(Pair{Generation: 1}))); err != nil {
		b.Fatal(err)
	}
	if it, err := st.Get(ctx, k.LatestGen()); err == nil {
		w.ptr.genVersion = it.Version
	}
	for i := range deltas {
		id := forwarding.ServerID(1025 + servers + i)
		d := &forwarding.Delta{Generation: w.table.Generation + 1,
			Servers: []forwarding.ServerChange{{ID: id, Server: forwarding.Server{Addr: netip.AddrFrom4([4]byte{11, 0, 0, byte(i)}), State: forwarding.Active}}}}
		for j := range 100 {
			idx := uint32((i*100+j)*100 + 99)
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: idx, Bucket: forwarding.Bucket{Current: id, History: forwarding.Chain{w.table.Buckets[idx].Current}, Changed: 1_700_000_100}})
		}
		if _, err := w.Publish(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	f := NewFollower(st, k, FollowerOptions{})
	b.ResetTimer()
	var s LoadStats
	for b.Loop() {
		if _, s, err = f.Load(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.BlobBytes), "blob-bytes")
	b.ReportMetric(float64(s.DeltaBytes), "delta-bytes")
	b.ReportMetric(float64(s.Deltas), "deltas")
	b.ReportMetric(float64(len(tab.Buckets)), "buckets")
}

// BenchmarkBlobCodec compares zlib levels on the 6.4 M-bucket blob: the
// choice of default level rests on this.
func BenchmarkBlobCodec(b *testing.B) {
	tab := paperTable(64000, 1)
	raw := blobBytes(tab)
	for _, level := range []int{1, 6, 9} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			var obj []byte
			for b.Loop() {
				obj, _ = encodeObject(meta{kind: KindBlob, generation: 1}, raw, level)
			}
			b.ReportMetric(float64(len(obj)), "bytes")
			b.ReportMetric(float64(len(raw)), "raw-bytes")
		})
	}
}
