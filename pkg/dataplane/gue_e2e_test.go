package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestEndToEndGUE: live TCP connections through a real mux and real agents
// in namespaces with the instance's encap set to GUE (default port 6080):
// connections open and exchange data; every bucket moves twice, A → B → C,
// inside the window, and A's connections are chained C → B → A in GUE (two
// hops), B's C → B, none breaks, new ones go to C; an MPTCP secondary
// subflow (GUE without private data) reaches its server by id. The mux
// counts every packet it sent in GUE, the agents every GUE packet they took.
//
// Twice: agents in tc alone, and with their XDP fast path attached natively
// in front (GUE packets at the newest generation then decapsulated in XDP,
// chainable ones left to tc).
func TestEndToEndGUE(t *testing.T) {
	t.Run("tc", func(t *testing.T) { endToEndGUE(t, false) })
	t.Run("xdp", func(t *testing.T) { endToEndGUE(t, true) })
}

func endToEndGUE(t *testing.T, withXDP bool) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, servers: []string{"a", "b", "c"},
		table: func() *forwarding.Table {
			t := allToA()
			t.Servers[e2eID["c"]] = forwarding.Server{Addr: e2eServer["c"], State: forwarding.Active}
			return t
		},
		instance: func(in *forwarding.Instance) { in.Encap = forwarding.EncapGUE }})
	if withXDP {
		e.attachAgentsXDP(t)
	}
	muxBefore, err := e.mux.Counters()
	must(t, err)
	const n = 6
	dial := func(want, tag string) []*echoConn {
		return dialServed(t, n, want, tag, func() *echoConn { return e.dial(t, false) })
	}
	onA := dial("a", "a-")
	if g := e.counter(t, "a", "gue"); g < 3*n {
		t.Fatalf("A took %d GUE packets for %d connections", g, n)
	}
	if x := e.counter(t, "a", "xdp_decap"); withXDP != (x >= 3*n) {
		t.Fatalf("A decapsulated %d packets in XDP (XDP attached: %v)", x, withXDP)
	}
	rules := &forwarding.HistoryRules{K: 4, Window: 240}
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
	chainedB, chainedC, gueA := e.counter(t, "b", "chained"), e.counter(t, "c", "chained"), e.counter(t, "a", "gue")
	for i, c := range onB {
		if who, err := c.ask(fmt.Sprint("b-after-", i), answerWithin); err != nil || who != "b" {
			t.Fatalf("connection %d of B broke after B → C: served by %q, %v", i, who, err)
		}
	}
	for i, c := range onA {
		if who, err := c.ask(fmt.Sprint("a-after-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d of A broke after A → B → C in GUE: served by %q, %v", i, who, err)
		}
	}
	if d := e.counter(t, "c", "chained") - chainedC; d < 2*n {
		t.Errorf("C chained %d packets, want at least %d (A's and B's)", d, 2*n)
	}
	if d := e.counter(t, "b", "chained") - chainedB; d < n {
		t.Errorf("B chained %d packets on to A, want at least %d", d, n)
	}
	// What reached A after the moves came chained, still in GUE.
	if d := e.counter(t, "a", "gue") - gueA; d < n {
		t.Errorf("A took %d GUE packets after the moves, want at least %d (chained in GUE)", d, n)
	}
	dial("c", "new-")

	// MPTCP: the secondary subflow goes by server id, GUE without private data.
	c := e.dial(t, true)
	if who, err := c.ask("mptcp", answerWithin); err != nil || who != "c" {
		t.Fatalf("mptcp connection: served by %q, %v", who, err)
	}
	subflows := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && subflows == 0; time.Sleep(50 * time.Millisecond) {
		subflows, err = mptcpSubflows(c.Conn)
		must(t, err)
	}
	if subflows < 1 {
		t.Fatal("no secondary MPTCP subflow was established through the mux in GUE")
	}
	for i := 0; i < 10; i++ {
		if who, err := c.ask(fmt.Sprint("mp-", i), answerWithin); err != nil || who != "c" {
			t.Fatalf("mptcp exchange %d: served by %q, %v", i, who, err)
		}
	}
	muxAfter, err := e.mux.Counters()
	must(t, err)
	sent := muxAfter["fwd_bucket"] + muxAfter["fwd_server_id"] - muxBefore["fwd_bucket"] - muxBefore["fwd_server_id"]
	if g := muxAfter["fwd_gue"] - muxBefore["fwd_gue"]; g != sent || sent == 0 || muxAfter["fwd_server_id"] == muxBefore["fwd_server_id"] {
		t.Errorf("mux sent %d packets in GUE of %d forwarded (server id: %d)", g, sent, muxAfter["fwd_server_id"]-muxBefore["fwd_server_id"])
	}
	if d := e.counter(t, "c", "stack_no_option"); d == 0 {
		t.Error("C took no GUE packet without private data (the subflow by id)")
	}
}
