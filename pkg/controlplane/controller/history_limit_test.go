package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// limitRig: an instance of 300 buckets on 8 servers (K = 4, window 10
// minutes) whose controller polls fake agents for held connections every
// 10 s, with metrics and logs kept.
type limitRig struct {
	c      *Controller
	h      *holder
	agents *fakeAgents
	clk    *clock
	root   string
	m      *Metrics
	logs   *logBook
}

func newLimitRig(t *testing.T, evictOldest bool) *limitRig {
	agents := newFakeAgents()
	logs, logger := newLogBook()
	h := newHolder(HoldOptions{Interval: 10 * time.Second, Client: agents, Logger: logger})
	root, clk := newRoot(), newClock()
	m := NewMetrics(prometheus.NewRegistry())
	c := New(shared, root, Options{Now: clk.now, Holds: h.hold, HoldCounts: h.count, EvictOldest: evictOldest, Metrics: m, Logger: logger})
	h.now = clk.now
	in := webInstance(300)
	in.ChainWindow = 10 * time.Minute
	ctx := storetest.Context(t)
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	var dips []NewDIP
	for id := forwarding.ServerID(1025); id < 1033; id++ {
		dips = append(dips, NewDIP{id, dipAddr(id), 1})
	}
	if err := c.AddDIPs(ctx, "web", dips); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	if err := c.Reconcile(ctx, "web"); err != nil { // the additions' windows end
		t.Fatal(err)
	}
	return &limitRig{c: c, h: h, agents: agents, clk: clk, root: root, m: m, logs: logs}
}

// removeOwner removes the current owner of bucket, then lets 20 s pass
// with the holder's rounds (every 10 s: the agents are asked, their
// answers settle), and returns the bucket after the move.
func (r *limitRig) removeOwner(t *testing.T, bucket uint32) forwarding.Bucket {
	t.Helper()
	ctx := storetest.Context(t)
	tab, err := loadTable(t, r.root)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.RemoveDIP(ctx, "web", tab.Buckets[bucket].Current); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r.clk.advance(10 * time.Second)
		if err := r.h.round(ctx, r.c); err != nil {
			t.Fatal(err)
		}
	}
	tab, err = loadTable(t, r.root)
	if err != nil {
		t.Fatal(err)
	}
	return tab.Buckets[bucket]
}

// fiveMoves: bucket 0's first owner holds 3 connections there; its owner
// is removed five times in a row (one removal at a time, each removing the
// server that held the first owner's connections), so the fifth move
// leaves K+1 = 5 previous owners.
func fiveMoves(t *testing.T, evictOldest bool) (*limitRig, forwarding.ServerID, forwarding.Bucket) {
	r := newLimitRig(t, evictOldest)
	tab, err := loadTable(t, r.root)
	if err != nil {
		t.Fatal(err)
	}
	first := tab.Buckets[0].Current
	r.agents.set(first, 0, 3)
	var b forwarding.Bucket
	for move := 1; move <= 5; move++ {
		b = r.removeOwner(t, 0)
		if move == 4 && (b.History.Len() != 4 || b.History[3] != first) {
			t.Fatalf("after 4 moves bucket 0 is %+v: want a full history ending with the first owner %d", b, first)
		}
	}
	return r, first, b
}

// TestHistoryLimitEvictionSpeaks: with the oldest-first rule (the
// behaviour before issue 28), the fifth move pushes the first owner out of
// bucket 0's history while it holds 3 connections there: counted per
// instance and server, logged once with the bucket and the count, and
// shown by `ctl show` (warning and JSON record).
func TestHistoryLimitEvictionSpeaks(t *testing.T) {
	r, first, b := fiveMoves(t, true)
	if b.History.Contains(first) {
		t.Fatalf("bucket 0 %+v still names %d: the scenario did not reach the limit", b, first)
	}
	server := fmt.Sprint(first)
	if v := value(t, r.m.evictions.WithLabelValues("web", server)); v != 1 {
		t.Errorf("evictions of server %d: %v, want 1", first, v)
	}
	if v := value(t, r.m.evictedConns.WithLabelValues("web", server)); v != 3 {
		t.Errorf("evicted connections of server %d: %v, want 3", first, v)
	}
	if v := value(t, r.m.cuts.WithLabelValues("web", "holder")); v != 1 {
		t.Errorf("cuts of holders: %v, want 1", v)
	}
	lines := r.logs.find("pushed a server out of bucket histories", "server="+server+" ")
	if len(lines) != 1 || !strings.Contains(lines[0], "bucket 0 (3 connections)") || !strings.Contains(lines[0], "k=4") {
		t.Errorf("want one log line naming bucket 0 and its 3 connections, got %q", lines)
	}
	ctx := storetest.Context(t)
	v, err := Show(ctx, shared, r.root, "web", r.clk.now())
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, w := range v.Warnings {
		warned = warned || strings.Contains(w, "HISTORY LIMIT") && strings.Contains(w, "server "+server) && strings.Contains(w, "held 3 connections")
	}
	if !warned {
		t.Errorf("ctl show warnings %q: no HISTORY LIMIT warning for server %d with 3 connections", v.Warnings, first)
	}
	e := v.HistoryEvictions
	if e == nil || e.Servers[first] == nil || e.Servers[first].Connections != 3 || e.Servers[first].Buckets != 1 ||
		len(e.Recent) != 1 || e.Recent[0].Buckets[0] != (BucketConns{0, 3}) || e.Recent[0].Avoiding {
		t.Errorf("ctl show record %+v: want server %d, bucket 0, 3 connections", e, first)
	}
	// A day later the warning is gone; the totals stay.
	v, err = Show(ctx, shared, r.root, "web", r.clk.now().Add(25*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Warnings) != 0 || v.HistoryEvictions == nil {
		t.Errorf("a day later: warnings %q, record %+v", v.Warnings, v.HistoryEvictions)
	}
}

// TestHistoryLimitKeepsHolder: with the default rule, the same fifth move
// drops an owner the agents reported idle in bucket 0 instead, and the
// first owner stays chained: nothing is evicted, nothing warned; the same
// moves happen (the balance is the assignment's, untouched).
func TestHistoryLimitKeepsHolder(t *testing.T) {
	r, first, b := fiveMoves(t, false)
	if !b.History.Contains(first) || b.History.Len() != 4 {
		t.Fatalf("bucket 0 is %+v: the first owner %d, which holds connections, left the history", b, first)
	}
	if v := value(t, r.m.cuts.WithLabelValues("web", "idle")); v < 1 {
		t.Errorf("cuts of idle entries: %v, want ≥ 1", v)
	}
	if v := value(t, r.m.cuts.WithLabelValues("web", "holder")) + value(t, r.m.evictions.WithLabelValues("web", fmt.Sprint(first))); v != 0 {
		t.Errorf("holders evicted: %v, want 0", v)
	}
	ctx := storetest.Context(t)
	v, err := Show(ctx, shared, r.root, "web", r.clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Warnings) != 0 || v.HistoryEvictions != nil {
		t.Errorf("nothing was evicted, yet ctl show says %q %+v", v.Warnings, v.HistoryEvictions)
	}
	// When every owner in the history holds connections, the oldest must
	// go, and the controller says it could not keep it.
	tab, _ := loadTable(t, r.root)
	for _, id := range tab.Buckets[0].History[:tab.Buckets[0].History.Len()] {
		r.agents.set(id, 0, 1)
	}
	oldest := tab.Buckets[0].History[3]
	r.clk.advance(10 * time.Second)
	if err := r.h.round(ctx, r.c); err != nil {
		t.Fatal(err)
	}
	b = r.removeOwner(t, 0)
	if b.History.Contains(oldest) {
		t.Fatalf("bucket 0 %+v: want the oldest %d out", b, oldest)
	}
	v, err = Show(ctx, shared, r.root, "web", r.clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if e := v.HistoryEvictions; e == nil || len(e.Recent) != 1 || e.Recent[0].Server != oldest || !e.Recent[0].Avoiding ||
		len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "could not keep it") {
		t.Errorf("want server %d's eviction shown as unavoidable, got %q %+v", oldest, v.Warnings, v.HistoryEvictions)
	}
}
