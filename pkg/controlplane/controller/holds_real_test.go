package controller

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// TestHoldRealConnection: the whole hold path on a real server. A client
// keeps a TCP connection open to a service bound to the VIP; the server
// (1025, its agent API on the DIP) gives every bucket to 1026, each naming
// 1025. Its agent, asked by the controller over HTTP, reports
// the live socket in the connection's bucket (computed here from the
// client's own 5-tuple): that bucket keeps 1025 for three windows, the
// others lose it at the window's end; once the client closes, the hold
// ends within a window.
func TestHoldRealConnection(t *testing.T) {
	l := newDSRLab(t)
	ctx := storetest.Context(t)
	conn, err := l.dial(ctx, "tcp4", netip.AddrPortFrom(l.vip, 80).String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	local := netip.MustParseAddrPort(conn.LocalAddr().String())
	const buckets = 50
	bucket := wire.Flow{Src: local.Addr(), Dst: l.vip, SrcPort: local.Port(), DstPort: 80, Proto: 6}.Bucket(buckets)

	client := &agentapi.Client{HTTP: &http.Client{Transport: &http.Transport{DialContext: l.dial}}}
	h := newHolder(HoldOptions{Interval: 10 * time.Second, Client: client})
	root, clk := newRoot(), newClock()
	c := New(shared, root, Options{Now: clk.now, Holds: h.hold})
	h.now = clk.now
	in := &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{l.vip},
		PortLow: 80, PortHigh: 80, Buckets: buckets, ChainWindow: time.Minute}
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	// 1025 owns every bucket, then gives them all to 1026 (half by the
	// addition, half by the drain): every history names 1025.
	if err := c.AddDIP(ctx, "web", 1025, l.dip, 1); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	if err := c.AddDIP(ctx, "web", 1026, netip.MustParseAddr("198.18.0.11"), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(ctx, "web", 1025, true); err != nil {
		t.Fatal(err)
	}
	// 1026's agent does not exist: it is never asked (never a previous owner).
	tick(t, c, h, clk, root, 3*time.Minute, map[uint32]forwarding.ServerID{bucket: 1025})
	tab, _ := loadTable(t, root)
	for i, b := range tab.Buckets {
		if uint32(i) != bucket && b.History.Contains(1025) {
			t.Fatalf("bucket %d without connections still names 1025 after 3 windows: %+v", i, b)
		}
	}
	conn.Close()
	time.Sleep(200 * time.Millisecond) // the server side closes too
	tick(t, c, h, clk, root, 2*time.Minute, nil)
	tab, _ = loadTable(t, root)
	if tab.Buckets[bucket].History.Contains(1025) {
		t.Fatalf("bucket %d still held a window after its connection closed: %+v", bucket, tab.Buckets[bucket])
	}
}
