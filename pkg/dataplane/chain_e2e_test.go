package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestEndToEndMultiHop: live TCP connections through a real mux and real
// agents in namespaces while every bucket moves twice, A → B → C, inside
// the window, with the histories the controller builds (HistoryRules, K=4).
// A's connections are then chained C → B → A (two hops), B's C → B, and all
// of them keep working; new connections go to C. The same moves with the
// paper's single previous owner (K=1) break A's connections, which is what
// the history is for.
func TestEndToEndMultiHop(t *testing.T) {
	for _, k := range []int{4, 1} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) { multiHop(t, k) })
	}
}

func multiHop(t *testing.T, k int) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, servers: []string{"a", "b", "c"}, table: func() *forwarding.Table {
		t := allToA()
		t.Servers[e2eID["c"]] = forwarding.Server{Addr: e2eServer["c"], State: forwarding.Active}
		return t
	}})
	const n = 6
	dial := func(want, tag string) []*echoConn {
		return dialServed(t, n, want, tag, func() *echoConn { return e.dial(t, false) })
	}
	onA := dial("a", "a-")
	rules := &forwarding.HistoryRules{K: k, Window: 240}
	move := func(to string) {
		rules.Now = uint32(time.Now().Unix())
		d := &forwarding.Delta{}
		for i, b := range e.table.Buckets {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i),
				Bucket: rules.Moved(b, forwarding.Bucket{Current: e2eID[to], Changed: rules.Now})})
		}
		e.publish(t, d)
	}
	move("b")
	onB := dial("b", "b-")
	move("c")
	if h := e.table.Buckets[0].History; k > 1 && h != (forwarding.Chain{e2eID["b"], e2eID["a"]}) {
		t.Fatalf("history after A → B → C: %v", h)
	}
	chainedB, chainedC := e.counter(t, "b", "chained"), e.counter(t, "c", "chained")
	for i, c := range onB {
		if who, err := c.ask(fmt.Sprint("b-after-", i), answerWithin); err != nil || who != "b" {
			t.Fatalf("connection %d of B broke after B → C: served by %q, %v", i, who, err)
		}
	}
	brokeA := 0
	for i, c := range onA {
		who, err := c.ask(fmt.Sprint("a-after-", i), 2*time.Second)
		if err != nil || who != "a" {
			brokeA++
			if k > 1 {
				t.Fatalf("connection %d of A broke after A → B → C: served by %q, %v", i, who, err)
			}
		}
	}
	if k == 1 {
		if brokeA == 0 {
			t.Fatal("with one previous owner A's connections survived two moves: the test cannot tell multi-hop from single-hop")
		}
		return
	}
	if d := e.counter(t, "c", "chained") - chainedC; d < 2*n {
		t.Errorf("C chained %d packets, want at least %d (A's and B's)", d, 2*n)
	}
	if d := e.counter(t, "b", "chained") - chainedB; d < n {
		t.Errorf("B chained %d packets on to A, want at least %d", d, n)
	}
	dial("c", "new-")
}
