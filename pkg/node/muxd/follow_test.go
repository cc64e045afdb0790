package muxd

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/wire"
	dto "github.com/prometheus/client_model/go"
)

// TestFollowDamagedRingAndBadServers is issue 11's rows "restarted muxes
// exit 1" and "one bad server freezes the instance", on a real XDP mux
// following a real store: the mux starts on a ring whose latest-gen is
// garbage (it waits, it does not exit) and loads it once repaired; the
// ring names a server 255.255.255.255 and one behind an unreachable route:
// the table goes in whole, both are reported (log, metric), clients whose
// bucket belongs to the good server connect through the mux while the
// others' packets are dropped and counted, and the next generation —
// which removes one bad server — applies. Then the store goes back (rows
// "restored from an older backup"): the mux refuses, counts it, and loads
// the repair's new incarnation whole.
func TestFollowDamagedRingAndBadServers(t *testing.T) {
	r := newRestartNet(t)
	_, err := r.mux.Run("ip", "route", "add", "unreachable", "198.19.5.0/24")
	must(t, err)
	ctx := storetest.Context(t)
	st := storetest.EmbeddedT(t)
	k := ring.InstanceKeys("/muxfollow", "web")
	in := &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{rsVIP},
		PortLow: 80, PortHigh: 80, Buckets: 67, ChainWindow: forwarding.DefaultChainWindow}
	w, err := ring.Create(ctx, st, k, in, ring.WriterOptions{})
	must(t, err)
	good, broadcast, unroutable := forwarding.ServerID(1025), forwarding.ServerID(1026), forwarding.ServerID(1027)
	addrs := map[forwarding.ServerID]netip.Addr{good: rsServer, broadcast: netip.MustParseAddr("255.255.255.255"),
		unroutable: netip.MustParseAddr("198.19.5.5")}
	d1 := &forwarding.Delta{Generation: 1}
	for id, a := range addrs {
		d1.Servers = append(d1.Servers, forwarding.ServerChange{ID: id, Server: forwarding.Server{Addr: a, State: forwarding.Active}})
	}
	owner := func(i int) forwarding.ServerID {
		switch {
		case i < 30:
			return good
		case i < 50:
			return broadcast
		}
		return unroutable
	}
	for i := range 67 {
		d1.Buckets = append(d1.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: owner(i)}})
	}
	_, err = w.Publish(ctx, d1)
	must(t, err)
	// Damage before the mux starts.
	must(t, st.Commit(ctx, store.Put(k.LatestGen(), []byte("not a generation"))))

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var d *Daemon
	must(t, r.mux.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPDriver, PinDir: "-", StateFile: r.dir + "/state.json", Metrics: "127.0.0.1:0"})
		return err
	}))
	defer r.mux.Do(d.Close)
	fctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := d.Follow(fctx, st, "/muxfollow", "web", log); err != nil {
		t.Fatalf("mux start on a damaged ring: %v", err)
	}
	if d.Healthy() == nil {
		t.Fatal("healthy before the ring could be loaded")
	}
	// The controller repairs.
	w2, rep, err := ring.Repair(ctx, st, k, ring.WriterOptions{}, ring.Pair{}, nil)
	must(t, err)
	t.Logf("repair: %v", rep)
	waitGen := func(g uint32) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if got, ok := d.Mux().Generation("web"); ok && got == g {
				return
			}
			if time.Now().After(deadline) {
				got, _ := d.Mux().Generation("web")
				t.Fatalf("mux at generation %d, want %d", got, g)
			}
		}
	}
	waitGen(w2.Pair().Generation)
	bad := d.Unreachable("web")
	for deadline := time.Now().Add(10 * time.Second); len(bad) < 2 && time.Now().Before(deadline); bad = d.Unreachable("web") {
		time.Sleep(20 * time.Millisecond) // reported right after the table goes in
	}
	if _, ok := bad[addrs[broadcast]]; !ok || len(bad) != 2 {
		t.Fatalf("unreachable servers reported: %v", bad)
	}
	if _, ok := bad[addrs[unroutable]]; !ok {
		t.Fatalf("unroutable server not reported: %v", bad)
	}
	var m dto.Metric
	must(t, d.servers.gauge.WithLabelValues("web", "255.255.255.255").Write(&m))
	if v := m.GetGauge().GetValue(); v != 1 {
		t.Fatalf("beamer_mux_server_unreachable for 255.255.255.255 = %v", v)
	}

	// Real connections: those hashed to the good server's buckets connect.
	before, err := d.Mux().Counters()
	must(t, err)
	// Each connection from its own source port, so its bucket is known.
	var mu sync.Mutex
	outcome := map[forwarding.ServerID][2]int{} // owner → connected, failed
	var wg sync.WaitGroup
	for i := range 24 {
		port := uint16(40000 + i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			bucket := wire.Flow{Src: rsClient, Dst: rsVIP, SrcPort: port, DstPort: 80, Proto: 6}.Bucket(67)
			r.client.Do(func() error {
				dialer := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IP(rsClient.AsSlice()), Port: int(port)}}
				c, err := dialer.Dial("tcp4", netip.AddrPortFrom(rsVIP, 80).String())
				mu.Lock()
				defer mu.Unlock()
				o := outcome[owner(int(bucket))]
				if err != nil {
					o[1]++
				} else {
					o[0]++
					c.Close()
				}
				outcome[owner(int(bucket))] = o
				return nil
			})
		}()
	}
	wg.Wait()
	after, err := d.Mux().Counters()
	must(t, err)
	moved := map[string]uint64{}
	for name, v := range after {
		if v != before[name] {
			moved[name] = v - before[name]
		}
	}
	t.Logf("24 connections by owner of their bucket [connected failed]: %v; counters moved: %v", outcome, moved)
	if outcome[good][0] == 0 || outcome[good][1] != 0 {
		t.Fatalf("connections of the good server's buckets: %v", outcome[good])
	}
	if n := outcome[broadcast][0] + outcome[unroutable][0]; n != 0 {
		t.Fatalf("%d connections through unreachable servers", n)
	}
	// The packets of both are dropped and counted: the unroutable server
	// has no route, and the broadcast address is refused by the data
	// plane's next-hop check (the kernel's FIB would route it by the
	// default route).
	lost := uint64(outcome[unroutable][1] + outcome[broadcast][1])
	if outcome[unroutable][1] == 0 || outcome[broadcast][1] == 0 || moved["drop_no_route"] < lost {
		t.Fatalf("connections failed to the unroutable / broadcast server: %d / %d, drop_no_route +%d",
			outcome[unroutable][1], outcome[broadcast][1], moved["drop_no_route"])
	}

	// The next generation removes the unroutable server and adds another
	// one behind the unreachable route: it applies; the removed server is
	// no longer reported, the added one is (a generation checks the
	// servers it adds), the broadcast one still is (its verdict kept).
	another := netip.MustParseAddr("198.19.5.6")
	d3 := &forwarding.Delta{Generation: w2.Pair().Generation + 1,
		Servers: []forwarding.ServerChange{{ID: unroutable, Remove: true},
			{ID: 1028, Server: forwarding.Server{Addr: another, State: forwarding.Active}}}}
	for i := 50; i < 67; i++ {
		d3.Buckets = append(d3.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: good}})
	}
	_, err = w2.Publish(ctx, d3)
	must(t, err)
	waitGen(d3.Generation)
	bad = d.Unreachable("web")
	for deadline := time.Now().Add(10 * time.Second); bad[another] == "" && time.Now().Before(deadline); bad = d.Unreachable("web") {
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := bad[addrs[broadcast]]; len(bad) != 2 || bad[another] == "" || !ok {
		t.Fatalf("after removing %v and adding %v, unreachable: %v", addrs[unroutable], another, bad)
	}

	// The store goes back (a restored backup): refused, logged, counted;
	// the repair's new incarnation is loaded whole.
	back := ring.FormatPointer(ring.Pair{Incarnation: w2.Pair().Incarnation, Generation: d3.Generation - 1})
	must(t, st.Commit(ctx, store.Put(k.LatestGen(), back), store.Put(k.LatestBlob(), back)))
	counter := func(name string) float64 {
		var m dto.Metric
		switch name {
		case "refused":
			must(t, d.ring.refused.WithLabelValues("web").Write(&m))
			return m.GetCounter().GetValue()
		case "resyncs":
			must(t, d.ring.resyncs.WithLabelValues("web").Write(&m))
			return m.GetCounter().GetValue()
		}
		must(t, d.ring.incarnation.WithLabelValues("web").Write(&m))
		return m.GetGauge().GetValue()
	}
	for deadline := time.Now().Add(20 * time.Second); counter("refused") != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("lower pair not refused")
		}
	}
	if g, _ := d.Mux().Generation("web"); g != d3.Generation {
		t.Fatalf("mux went back to generation %d", g)
	}
	w4, _, err := ring.Repair(ctx, st, k, ring.WriterOptions{}, ring.Pair{Incarnation: w2.Pair().Incarnation, Generation: d3.Generation}, w2.Table())
	must(t, err)
	waitGen(w4.Pair().Generation)
	for deadline := time.Now().Add(10 * time.Second); counter("resyncs") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // counted right after the table goes in
	}
	if counter("resyncs") != 1 || counter("incarnation") != float64(w4.Pair().Incarnation) || counter("refused") != 1 {
		t.Fatalf("after the repair: resyncs %v, incarnation %v (want %d), refused %v", counter("resyncs"), counter("incarnation"), w4.Pair().Incarnation, counter("refused"))
	}
}
