package muxd

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestInspectStoppedMux is issue 25's row "inspect with the mux daemon
// stopped shows the same table as ctl show": a controller on a store, a
// real mux following it; a server is removed (so buckets carry previous
// owners); the mux daemon ends leaving its program pinned (as a crash or
// an upgrade does); dataplane.InspectMux, reading only the pins, shows
// every server with the bucket count controller.Show gives it, the
// store's version, and the histories the store's table holds.
func TestInspectStoppedMux(t *testing.T) {
	rig := netlabtest.NewRig(t, "muxinsp")
	st := storetest.EmbeddedT(t)
	ctx := storetest.Context(t)
	root := "/inspect"
	vip := netip.MustParseAddr("198.18.100.1")

	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		controller.Run(cctx, st, root, controller.RunOptions{Identity: "ctl", ReconcileEvery: time.Hour,
			Holds: &controller.HoldOptions{Interval: time.Second, Client: noConnections{}}, Options: controller.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitUntil(t, "controller elected", 30*time.Second, func() bool {
		l, err := st.Leader(ctx, controller.ElectionKey(root))
		return err == nil && l == "ctl"
	})
	submit := func(r controller.Request) {
		t.Helper()
		must(t, controller.Submit(ctx, st, root, r, 20*time.Second))
	}
	submit(controller.Request{Op: controller.OpCreateInstance, Config: &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer,
		VIPs: []netip.Addr{vip}, PortLow: 80, PortHigh: 81, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}})
	for id := forwarding.ServerID(1025); id < 1029; id++ {
		submit(controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: id, Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(id - 1015)}), Weight: 1})
	}
	submit(controller.Request{Op: controller.OpRemoveDIP, Instance: "web", ID: 1026})

	ns, _ := rig.Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	pinDir := netlabtest.PinDir(t, "inspect")
	var d *Daemon
	must(t, ns.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: pinDir, StateFile: t.TempDir() + "/state.json",
			Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		return err
	}))
	fctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	must(t, d.Follow(fctx, st, root, "web", slog.New(slog.NewTextHandler(os.Stderr, nil))))
	tab, _, err := ring.NewFollower(st, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(ctx)
	must(t, err)
	waitUntil(t, "the mux runs the store's table", 20*time.Second, func() bool {
		inc, gen, ok := d.Mux().Version("web")
		return ok && inc == tab.Incarnation && gen == tab.Generation
	})
	view, err := controller.Show(ctx, st, root, "web", time.Now())
	must(t, err)
	// The daemon goes; its program and maps stay pinned, still forwarding.
	stop()
	must(t, d.Abandon())
	t.Cleanup(func() { ns.Do(func() error { return dataplane.Unpin(pinDir, nil) }) })

	in, err := dataplane.InspectMux(pinDir)
	must(t, err)
	// What `beamer mux inspect -o json` prints, parsed back.
	raw, err := json.Marshal(in)
	must(t, err)
	var doc dataplane.MuxInspection
	must(t, json.Unmarshal(raw, &doc))
	if len(doc.Tables) != 1 {
		t.Fatalf("tables %+v, want one", doc.Tables)
	}
	got := doc.Tables[0]
	if len(got.VIPs) != 1 || got.VIPs[0].VIP != vip || got.VIPs[0].Incarnation != tab.Incarnation || got.VIPs[0].Generation != view.Generation {
		t.Errorf("VIPs %+v, want %v at incarnation %d generation %d", got.VIPs, vip, tab.Incarnation, view.Generation)
	}
	if got.Strategy != "beamer" || got.Encap != "ipip" || got.Buckets != 100 || strings.Join(got.Ports, ",") != "tcp 80-81,tcp 1025-65535 (server ids)" {
		t.Errorf("table %+v", got)
	}
	inspected := map[forwarding.ServerID]int{}
	for _, s := range got.Servers {
		inspected[s.ID] = s.Buckets
	}
	shown := map[forwarding.ServerID]int{}
	for _, dv := range view.DIPs {
		shown[dv.ID] = dv.Buckets
		if s := serverOf(got, dv.ID); s == nil || s.Addr != dv.Addr.String() {
			t.Errorf("server %d: inspect %+v, ctl show address %v", dv.ID, s, dv.Addr)
		}
	}
	for id, n := range inspected {
		if n != shown[id] {
			t.Errorf("server %d: %d buckets inspected, ctl show says %d", id, n, shown[id])
		}
	}
	if len(shown) != 3 || got.Unowned != view.Unowned {
		t.Errorf("ctl show %v unowned %d; inspect %v unowned %d", shown, view.Unowned, inspected, got.Unowned)
	}
	// Histories: as the store's table has them (the removed server's
	// buckets name it as their previous owner).
	chained, prev := 0, map[forwarding.ServerID]int{}
	for _, b := range tab.Buckets {
		if b.History.Len() > 0 {
			chained++
		}
		for _, id := range b.History[:b.History.Len()] {
			prev[id]++
		}
	}
	if prev[1026] == 0 {
		t.Fatalf("store's table names no previous owner 1026: %v", prev)
	}
	gotPrev := map[forwarding.ServerID]int{}
	for _, p := range got.PreviousOwners {
		gotPrev[p.ID] = p.Buckets
	}
	if got.Chained != chained || len(gotPrev) != len(prev) || got.ChainsMissing != 0 {
		t.Errorf("chained %d previous owners %v (missing %d), store: %d %v", got.Chained, gotPrev, got.ChainsMissing, chained, prev)
	}
	for id, n := range prev {
		if gotPrev[id] != n {
			t.Errorf("previous owner %d: %d buckets inspected, store %d", id, gotPrev[id], n)
		}
	}
	if _, ok := doc.Counters["fwd_bucket"]; !ok || len(doc.Counters) < 10 {
		t.Errorf("counters %v", doc.Counters)
	}
}

func serverOf(t dataplane.MuxTable, id forwarding.ServerID) *dataplane.ServerBuckets {
	for i := range t.Servers {
		if t.Servers[i].ID == id {
			return &t.Servers[i]
		}
	}
	return nil
}

// TestInspectNothingOrWrongLayout: inspect says so, without a panic, when
// nothing is pinned at the directory, when the directory holds no pinned
// program, and when a pinned map is of another layout than this build's
// (as one pinned by another beamer version).
func TestInspectNothingOrWrongLayout(t *testing.T) {
	dir := netlabtest.PinDir(t, "inspectbad")
	_, err := dataplane.InspectMux(dir)
	if !errors.Is(err, dataplane.ErrNothingPinned) || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("missing directory: %v", err)
	}
	_, err = dataplane.InspectAgent(dir, time.Now())
	if !errors.Is(err, dataplane.ErrNothingPinned) {
		t.Errorf("agent, missing directory: %v", err)
	}
	must(t, os.MkdirAll(dir, 0o700))
	_, err = dataplane.InspectMux(dir)
	if !errors.Is(err, dataplane.ErrNothingPinned) || !strings.Contains(err.Error(), "no pinned link") {
		t.Errorf("empty directory: %v", err)
	}
	// mux_counters of another layout: one u64 per CPU instead of the set.
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "mux_counters", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	must(t, err)
	defer m.Close()
	must(t, m.Pin(filepath.Join(dir, "mux_counters")))
	_, err = dataplane.InspectMux(dir)
	if err == nil || !strings.Contains(err.Error(), "another layout") || !strings.Contains(err.Error(), "mux_counters") {
		t.Errorf("wrong layout: %v", err)
	}
}
