package awfd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeCapacity answers capacity polls per server address.
type fakeCapacity struct {
	mu    sync.Mutex
	avail map[netip.Addr]float64
	down  map[netip.Addr]bool
	asked int
}

func (f *fakeCapacity) Capacity(_ context.Context, agent netip.AddrPort) (*agentapi.CapacityReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if f.down[agent.Addr()] || agent.Port() != agentapi.DefaultPort {
		return nil, errors.New("connection refused")
	}
	a := f.avail[agent.Addr()]
	return &agentapi.CapacityReport{Capacity: 100, Available: a}, nil
}

func (f *fakeCapacity) set(id forwarding.ServerID, a float64, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.avail[dipAddr(id)] = a
	f.down[dipAddr(id)] = down
}

// The poller's tests run the real controller on an embedded store.
var shared store.Store

func TestMain(m *testing.M) { os.Exit(storetest.MainWithEmbedded(m, &shared)) }

var rootSeq atomic.Int64

func newRoot() string { return fmt.Sprintf("/awfdtest%d", rootSeq.Add(1)) }

func webInstance(buckets uint32) *forwarding.Instance {
	return &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		PortLow: 80, PortHigh: 80, Buckets: buckets, ChainWindow: forwarding.DefaultChainWindow}
}

func dipAddr(id forwarding.ServerID) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 0, byte(id >> 8), byte(id)})
}

// pollerOn is a poller over st under root as the elected controller makes
// it (controller.NewHost).
func pollerOn(st store.Store, root string, o controller.HostOptions) *poller {
	return newPoller(controller.NewHost(st, root, forwarding.StrategyAWFD, o), pollOptions{})
}

// awfdRig: an AWFD instance of 4 active servers and a poller with a
// settable clock (ms resolution).
func awfdRig(t *testing.T) (*poller, *fakeCapacity, *time.Time, string) {
	root := newRoot()
	c := controller.New(shared, root, controller.Options{})
	in := webInstance(307)
	in.Strategy = forwarding.StrategyAWFD
	in.AWFD = &forwarding.AWFDOptions{Classes: 4, Poll: 250 * time.Millisecond}
	ctx := storetest.Context(t)
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	ids := []forwarding.ServerID{1025, 1026, 1027, 1028}
	var add []controller.NewDIP
	for _, id := range ids {
		add = append(add, controller.NewDIP{ID: id, Addr: dipAddr(id), Weight: 1})
	}
	if err := c.AddDIPs(ctx, "web", add); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	caps := &fakeCapacity{avail: map[netip.Addr]float64{}, down: map[netip.Addr]bool{}}
	now := time.UnixMilli(1_700_000_000_000)
	p := pollerOn(shared, root, controller.HostOptions{Agents: caps, Now: func() time.Time { return now },
		Metrics: controller.NewMetrics(prometheus.NewRegistry())})
	return p, caps, &now, root
}

func readRecord(t *testing.T, root string) *classes.Record {
	t.Helper()
	r, err := classes.Read(storetest.Context(t), shared, ring.InstanceKeys(root, "web"))
	if err != nil || r == nil {
		t.Fatalf("record: %v %v", r, err)
	}
	return r
}

func weightsOf(r *classes.Record) []int {
	return []int{r.Weight(1025), r.Weight(1026), r.Weight(1027), r.Weight(1028)}
}

// Polls become classes; a server whose agent stops answering keeps its
// class for the hold (3 polls), then decays into lower classes and idle;
// answering again restores it at once. The sequence only grows, also for
// a new poller (a new leader) whose clock is behind the stored record's.
func TestAWFDPollerClassesAndMissedPolls(t *testing.T) {
	p, caps, now, root := awfdRig(t)
	ctx := storetest.Context(t)
	caps.set(1025, 100, false)
	caps.set(1026, 50, false)
	caps.set(1027, 25, false)
	caps.set(1028, 0, false)
	step := func() *classes.Record {
		t.Helper()
		*now = now.Add(250 * time.Millisecond)
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
		return readRecord(t, root)
	}
	r := step()
	if w := weightsOf(r); !slices.Equal(w, []int{4, 2, 1, 0}) {
		t.Fatalf("weights %v, want [4 2 1 0]", w)
	}
	if r.Total() != 7 || r.M() != 4 {
		t.Fatalf("record %+v", r)
	}
	// ctl show prints the classes the muxes run.
	v, err := controller.Show(ctx, shared, root, "web", *now)
	if err != nil || v.AWFD == nil || v.AWFD.Seq != r.Seq {
		t.Fatalf("show: %v %+v", err, v)
	}
	if d := strings.Join(v.Details, "\n"); !strings.Contains(d, "class 4: range 3–6 (57.1% of new connections): 1025") ||
		!strings.Contains(d, "class 0 (no new connections): 1028") {
		t.Fatalf("show details:\n%s", d)
	}
	seq := r.Seq
	// 1025 stops answering: held for 750 ms (3 polls).
	caps.set(1025, 100, true)
	for i := 0; i < 3; i++ {
		if w := weightsOf(step()); w[0] != 4 {
			t.Fatalf("poll %d after the agent went silent: weights %v, want 1025 still 4 (hold)", i+1, w)
		}
	}
	var seen []int
	for i := 0; i < 12; i++ {
		r = step()
		seen = append(seen, r.Weight(1025))
		if r.Seq < seq {
			t.Fatalf("sequence went back from %d to %d", seq, r.Seq)
		}
		seq = r.Seq
	}
	if seen[len(seen)-1] != 0 || seen[0] == 0 || !slices.IsSortedFunc(seen, func(a, b int) int { return b - a }) {
		t.Fatalf("1025's weight after the hold: %v, want a decay to 0", seen)
	}
	caps.set(1025, 100, false)
	if w := weightsOf(step()); !slices.Equal(w, []int{4, 2, 1, 0}) {
		t.Fatalf("after the agent answered again: %v", w)
	}
	var fails, writes, class4 dto.Metric
	p.metrics.failures.WithLabelValues("web").Write(&fails)
	p.metrics.writes.WithLabelValues("web").Write(&writes)
	p.metrics.classes.WithLabelValues("web", "4").Write(&class4)
	if fails.GetCounter().GetValue() != 15 || writes.GetCounter().GetValue() < 3 || class4.GetGauge().GetValue() != 1 {
		t.Fatalf("metrics: %v poll failures (want 15), %v records written, %v servers in class 4",
			fails.GetCounter().GetValue(), writes.GetCounter().GetValue(), class4.GetGauge().GetValue())
	}
	// A new leader whose clock is 10 s behind continues the sequence.
	seq = readRecord(t, root).Seq
	back := now.Add(-10 * time.Second)
	p2 := pollerOn(shared, root, controller.HostOptions{Agents: caps, Now: func() time.Time { return back }})
	caps.set(1026, 100, false) // a change, so the record is written
	if err := p2.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, root); r.Seq <= seq {
		t.Fatalf("new leader wrote seq %d ≤ %d", r.Seq, seq)
	}
}

// Unchanged classes are not rewritten at every poll (4 Hz of identical
// writes), only at the heartbeat; a removed server leaves the record.
func TestAWFDPollerWritesOnChange(t *testing.T) {
	p, caps, now, root := awfdRig(t)
	ctx := storetest.Context(t)
	for _, id := range []forwarding.ServerID{1025, 1026, 1027, 1028} {
		caps.set(id, 100, false)
	}
	*now = now.Add(time.Second)
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	first := readRecord(t, root)
	for i := 0; i < 8; i++ { // 2 s of polls, below the 5 s heartbeat
		*now = now.Add(250 * time.Millisecond)
		if err := p.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if r := readRecord(t, root); r.Seq != first.Seq {
		t.Fatalf("unchanged classes rewritten: seq %d → %d", first.Seq, r.Seq)
	}
	*now = now.Add(5 * time.Second)
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, root); r.Seq == first.Seq {
		t.Fatal("no heartbeat write after 5 s")
	}
	c := controller.New(shared, root, controller.Options{})
	if err := c.RemoveDIP(ctx, "web", 1028); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(2 * time.Second) // past the refresh
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if r := readRecord(t, root); r.Weight(1028) != 0 || slices.Contains(r.Idle, 1028) {
		t.Fatalf("removed server still in the record: %+v", r)
	}
}
