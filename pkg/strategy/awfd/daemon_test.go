package awfd

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/research/faults/storeloss"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestAWFDRecordFollower: a mux follows the class record in the store (a
// real embedded etcd, a real data plane): it loads new records; keeps the
// last good one when the key holds garbage or a hostile record; refuses a
// record older than the running one (a delayed write); and when updates
// are lost (every one dropped) it keeps dispatching by the last record it
// has.
func TestAWFDRecordFollower(t *testing.T) {
	netlabtest.RequireRoot(t)
	st := storetest.EmbeddedT(t)
	ctx := storetest.Context(t)
	m, err := dataplane.LoadMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), ConnTrackEntries: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := forwarding.Instance{Name: "web", Strategy: forwarding.StrategyAWFD, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 101}
	table := forwarding.NewTable(101)
	var servers []assign.Server
	for i := range 3 {
		id := forwarding.ServerID(1025 + i)
		table.Servers[id] = forwarding.Server{Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}), State: forwarding.Active}
		servers = append(servers, assign.Server{ID: id, Weight: 1})
	}
	entries, err := assign.MaglevTable(servers, 101)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range entries {
		table.Buckets[i] = forwarding.Bucket{Current: id}
	}
	table.Generation = 1
	if err := m.SetInstance(cfg, table); err != nil {
		t.Fatal(err)
	}
	k := ring.InstanceKeys("/awfdtest", "web")
	put := func(b []byte) {
		t.Helper()
		if err := st.Commit(ctx, store.Put(classes.Key(k), b)); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(seq uint64, w ...int) []byte {
		r, err := classes.Build(seq, time.Now().UnixMilli(), 4, []forwarding.ServerID{1025, 1026, 1027}, w)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	running := func() uint64 {
		if r := RecordOf(m.WithInstance, "web"); r != nil {
			return r.Seq
		}
		return 0
	}
	waitSeq := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if running() == want {
				return
			}
		}
		t.Fatalf("mux runs record %d, want %d", running(), want)
	}
	follow := func(from store.Store) (daemonspi.Host, context.CancelFunc) {
		d := muxd.StrategyHost(m, make(chan struct{}), prometheus.NewRegistry(), forwarding.StrategyAWFD)
		c, cancel := context.WithCancel(ctx)
		go daemon{}.Follow(c, d, from, k, "web", slog.Default())
		return d, cancel
	}
	count := func(d daemonspi.Host, result string) float64 {
		var out dto.Metric
		if err := d.Metrics().(*daemonMetrics).records.WithLabelValues("web", result).Write(&out); err != nil {
			t.Fatal(err)
		}
		return out.GetCounter().GetValue()
	}

	d, stop := follow(st)
	put(rec(10, 4, 2, 1))
	waitSeq(10)
	// The follower reads the key's latest value, so a write overwritten
	// before it looked is never judged: wait for each verdict before the
	// next write (a busy CI machine once saw only the last of them).
	waitCount := func(result string, want float64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if count(d, result) >= want {
				return
			}
		}
		t.Fatalf("%s counted %v, want ≥ %v", result, count(d, result), want)
	}
	for i, bad := range [][]byte{[]byte("garbage"), []byte(`{"seq":11,"classes":[[1025],[1025]],"upper":[1,3]}`),
		[]byte(`{"seq":12,"classes":[[80]],"upper":[1]}`)} {
		put(bad)
		waitCount("invalid", float64(i+1))
	}
	put(rec(5, 1, 1, 1)) // older: a delayed write
	waitCount("refused_old", 1)
	time.Sleep(1500 * time.Millisecond) // its 1 s re-read of the same value counts nothing more
	if running() != 10 || count(d, "invalid") < 3 || count(d, "refused_old") != 1 {
		t.Fatalf("running %d, invalid %v, refused_old %v: want 10, ≥3, 1", running(), count(d, "invalid"), count(d, "refused_old"))
	}
	put(rec(20, 0, 0, 4))
	waitSeq(20)
	if got := RecordOf(m.WithInstance, "web"); !slices.Equal(got.Classes[3], []forwarding.ServerID{1027}) || count(d, "loaded") != 2 {
		t.Fatalf("record %+v, loaded %v", got, count(d, "loaded"))
	}
	stop()

	// Every update lost on its way (the loss experiment's fault,
	// research/faults/storeloss): the mux keeps the last record it loaded.
	lossy, err := storeloss.Wrap(st, func(key string) bool { return key == classes.Key(k) }, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, stop = follow(lossy)
	defer stop()
	put(rec(30, 4, 0, 0))
	put(rec(31, 4, 4, 0))
	time.Sleep(1500 * time.Millisecond)
	if running() != 20 || lossy.Dropped() < 1 || count(d, "loaded") != 0 {
		t.Fatalf("with every update lost: running %d, lost %v, loaded %v; want 20, ≥1, 0", running(), lossy.Dropped(), count(d, "loaded"))
	}
}
