package agentd

import (
	"encoding/json"
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestInspectStoppedAgent: connections reach a server through a mux
// whose table is at (incarnation, generation 7), with every bucket moved
// from a retired server 1031; the agent daemon exits leaving its program
// pinned; dataplane.InspectAgent, reading only the pins, shows the VIP
// with its buckets and window, the mux's version the agent saw, the
// buckets whose change time it remembers, and its counters.
func TestInspectStoppedAgent(t *testing.T) {
	vip := netip.MustParseAddr("198.18.100.1")
	client, muxNS, srv := dsrNet(t, "agentinsp", vip)

	must(t, muxNS.Sysctl("net.ipv4.ip_forward", "1"))
	muxPins := netlabtest.PinDir(t, "inspmuxtr") // the mux's traffic is inspected too
	m, err := dataplane.LoadMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), PinDir: muxPins})
	must(t, err)
	t.Cleanup(func() { m.Close(); dataplane.Unpin(muxPins, nil) })
	must(t, muxNS.Do(func() error {
		l, err := m.Attach("eth0", dataplane.XDPDriver)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}))
	incarnation := uint32(time.Now().Unix()) - 100
	changed := uint32(time.Now().Unix()) - 5
	table := forwarding.NewTable(67)
	table.Incarnation, table.Generation = incarnation, 7
	table.Servers[1030] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	table.Servers[1031] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.11"), State: forwarding.Retired}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: 1030, History: forwarding.Chain{1031}, Changed: changed}
	}
	must(t, m.SetInstance(forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 67, ChainWindow: forwarding.DefaultChainWindow}, table))
	must(t, dataplane.EnsureNeighbors(muxNS.Netlink(), []netip.Addr{netip.MustParseAddr("198.18.0.10")}))

	d, _, opts := startEchoServer(t, srv, vip)
	const conns = 5
	for i := range conns {
		c := netlabtest.Dial(t, client, nil, "tcp4", netip.AddrPortFrom(vip, 80).String())
		c.SetDeadline(time.Now().Add(10 * time.Second))
		msg := fmt.Sprintf("hello %d\n", i)
		_, err := io.WriteString(c, msg)
		buf := make([]byte, len(msg))
		if err == nil {
			_, err = io.ReadFull(c, buf)
		}
		c.Close()
		if err != nil || string(buf) != msg {
			t.Fatalf("connection %d: %q, %v", i, buf, err)
		}
	}
	must(t, d.Abandon())
	t.Cleanup(func() { dataplane.Unpin(opts.PinDir, nil) })

	in, err := dataplane.InspectAgent(opts.PinDir, time.Now())
	must(t, err)
	raw, err := json.Marshal(in) // what `beamer agent inspect -o json` prints
	must(t, err)
	var doc struct { // the agent's fields and Cheetah's beside them
		dataplane.AgentInspection
		Cheetah []cheetah.VIPInspect `json:"cheetah"`
	}
	must(t, json.Unmarshal(raw, &doc))
	if len(doc.VIPs) != 1 {
		t.Fatalf("VIPs %+v, want one", doc.VIPs)
	}
	v := doc.VIPs[0]
	if v.VIP != vip || v.Buckets != 67 || v.Window != forwarding.DefaultChainWindow.String() {
		t.Errorf("VIP %+v, want %v with 67 buckets and window %v", v, vip, forwarding.DefaultChainWindow)
	}
	if v.Incarnation != incarnation || v.Generation != 7 {
		t.Errorf("version seen %d/%d, want the mux's %d/7", v.Incarnation, v.Generation, incarnation)
	}
	// Every packet named its bucket's change time: the buckets the
	// connections hashed to are remembered, inside the window.
	if v.Moved < 1 || v.Moved > conns || v.Chaining != v.Moved {
		t.Errorf("buckets moved %d chaining %d, want 1–%d, all chaining", v.Moved, v.Chaining, conns)
	}
	if doc.Counters["local_syn"] < conns {
		t.Errorf("local_syn %d, want ≥ %d: %v", doc.Counters["local_syn"], conns, doc.Counters)
	}
	if len(doc.Cheetah) != 0 {
		t.Errorf("cheetah VIPs %+v on a beamer instance", doc.Cheetah)
	}

	// The mux's side of the same connections: `mux inspect` shows the
	// VIP's traffic and the server's, from the kernel's counters.
	mi, err := dataplane.InspectMux(muxPins)
	must(t, err)
	if len(mi.Tables) != 1 || len(mi.Tables[0].VIPs) != 1 || mi.Tables[0].VIPs[0].Traffic == nil {
		t.Fatalf("mux inspect: %+v, want one VIP with its traffic", mi.Tables)
	}
	tr := mi.Tables[0].VIPs[0].Traffic
	if tr.NewFlows < conns || tr.Packets < 3*conns || tr.Bytes < 40*tr.Packets {
		t.Errorf("mux inspect traffic %+v, want ≥ %d new flows and their packets and bytes", tr, conns)
	}
	for _, s := range mi.Tables[0].Servers {
		if s.ID == 1030 && (s.Packets != tr.Packets || s.Bytes != tr.Bytes) {
			t.Errorf("mux inspect server 1030 (every bucket's owner): %d packets %d bytes, the VIP %d / %d", s.Packets, s.Bytes, tr.Packets, tr.Bytes)
		}
	}
}
