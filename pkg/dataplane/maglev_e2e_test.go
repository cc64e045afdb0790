package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// maglevTable is the weighted Maglev table over the named servers, with
// every server of the network in the id table.
func maglevTable(t *testing.T, names ...string) *forwarding.Table {
	table := allToA()
	var backends []assign.Server
	for _, n := range names {
		backends = append(backends, assign.Server{ID: e2eID[n], Weight: 1})
	}
	entries, err := assign.MaglevTable(backends, e2eBuckets)
	must(t, err)
	for i, id := range entries {
		table.Buckets[i] = forwarding.Bucket{Current: id}
	}
	return table
}

// TestMaglevEndToEnd shows what the papers say of stateful muxes: open
// connections survive a backend addition while they stay on the same mux
// (connection-table hits), and break when the mux set changes too — the
// other mux never saw them and hashes them with the new table.
func TestMaglevEndToEnd(t *testing.T) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyMaglev, muxes: 2,
		table: func() *forwarding.Table { return maglevTable(t, "a") }})
	const n = 24
	var conns []*echoConn
	for i := 0; i < n; i++ {
		c := e.dial(t, false)
		if who, err := c.ask(fmt.Sprint("hello-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d: served by %q, %v", i, who, err)
		}
		conns = append(conns, c)
	}

	// Backend b joins: about half the table's entries move to it.
	next := maglevTable(t, "a", "b")
	d := &forwarding.Delta{}
	for i, b := range next.Buckets {
		if e.table.Buckets[i] != b {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: b})
		}
	}
	e.publish(t, d)
	before, err := e.mux.Counters()
	must(t, err)
	for i, c := range conns {
		if who, err := c.ask(fmt.Sprint("same-mux-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d on the same mux after a backend was added: served by %q, %v", i, who, err)
		}
	}
	after, err := e.mux.Counters()
	must(t, err)
	if after["ct_hit"]-before["ct_hit"] < n {
		t.Fatalf("%d connection-table hits for %d connections", after["ct_hit"]-before["ct_hit"], n)
	}
	if new, _ := e.dial(t, false).ask("new", answerWithin); new == "" {
		t.Fatal("a new connection failed after the backend was added")
	}

	// The mux set changes: the client's traffic now reaches mux 1.
	e.useMux(t, 1)
	broken, kept := 0, 0
	for i, c := range conns {
		who, err := c.ask(fmt.Sprint("other-mux-", i), time.Second)
		switch {
		case err != nil:
			broken++
		case who == "a":
			kept++
		default:
			t.Fatalf("connection %d answered by %q", i, who)
		}
	}
	t.Logf("after the mux change: %d of %d connections broken, %d kept", broken, n, kept)
	if broken == 0 {
		t.Fatal("no connection broke when both the mux set and the backend set changed; the stateful baseline must")
	}
	if kept == 0 {
		t.Fatal("every connection broke: those whose table entry did not move must survive")
	}
}
