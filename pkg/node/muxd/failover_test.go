package muxd

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	dto "github.com/prometheus/client_model/go"
)

// noConnections is every agent answering the controller's hold polls with
// no connection.
type noConnections struct{}

func (noConnections) Connections(_ context.Context, _ netip.AddrPort, vip netip.Addr, n uint32) (*agentapi.ConnectionsReport, error) {
	return &agentapi.ConnectionsReport{VIP: vip, Buckets: n}, nil
}

// TestFailoverOneResyncPerMux is issue 28's row "controller failover": two
// controller processes' loops (connection holds on, as `beamer controller`
// runs by default) on one store and two real muxes following it; the
// leader stops, the standby takes over. Each mux loads exactly one whole
// table for the failover (beamer_mux_ring_resyncs_total +1, one new
// incarnation), and runs the store's state after the next ctl request.
func TestFailoverOneResyncPerMux(t *testing.T) {
	rig := netlabtest.NewRig(t, "muxfo")
	st := storetest.EmbeddedT(t)
	ctx := storetest.Context(t)
	root := "/failover"
	vip := netip.MustParseAddr("198.18.100.1")

	start := func(name string) func() {
		cctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			controller.Run(cctx, st, root, controller.RunOptions{Identity: name, ReconcileEvery: time.Hour,
				Holds:   &controller.HoldOptions{Interval: time.Second, Client: noConnections{}},
				Options: controller.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), nil)).With("controller", name)}})
			close(done)
		}()
		var once sync.Once
		stop := func() { once.Do(func() { cancel(); <-done }) }
		t.Cleanup(stop)
		return stop
	}
	waitLeader := func(want string) {
		waitUntil(t, want+" elected", 30*time.Second, func() bool {
			l, err := st.Leader(ctx, controller.ElectionKey(root))
			return err == nil && l == want
		})
	}
	submit := func(r controller.Request) {
		t.Helper()
		must(t, controller.Submit(ctx, st, root, r, 20*time.Second))
	}
	stopA := start("ctl-a")
	waitLeader("ctl-a")
	submit(controller.Request{Op: controller.OpCreateInstance, Config: &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer,
		VIPs: []netip.Addr{vip}, PortLow: 80, PortHigh: 80, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}})
	for id := forwarding.ServerID(1025); id < 1028; id++ {
		submit(controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: id, Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(id - 1015)}), Weight: 1})
	}

	var muxes []*Daemon
	for i := range 2 {
		ns, _ := rig.Pair(fmt.Sprintf("mux%d", i), netip.MustParsePrefix("198.18.0.1/24"), fmt.Sprintf("net%d", i), netip.MustParsePrefix("198.18.0.10/24"), 1600)
		var d *Daemon
		must(t, ns.Do(func() (err error) {
			d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-", StateFile: t.TempDir() + "/state.json", Metrics: "127.0.0.1:0",
				Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
			return err
		}))
		t.Cleanup(func() { ns.Do(d.Close) })
		fctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		must(t, d.Follow(fctx, st, root, "web", slog.New(slog.NewTextHandler(os.Stderr, nil))))
		muxes = append(muxes, d)
	}
	storePair := func() ring.Pair {
		tab, _, err := ring.NewFollower(st, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(ctx)
		must(t, err)
		return ring.Pair{Incarnation: tab.Incarnation, Generation: tab.Generation}
	}
	current := func(what string) ring.Pair {
		t.Helper()
		var want ring.Pair
		waitUntil(t, what+": every mux runs the store's state", 20*time.Second, func() bool {
			want = storePair()
			for _, d := range muxes {
				inc, gen, ok := d.Mux().Version("web")
				if !ok || (ring.Pair{Incarnation: inc, Generation: gen}) != want {
					return false
				}
			}
			return true
		})
		return want
	}
	resyncs := func(d *Daemon) float64 {
		var m dto.Metric
		must(t, d.ring.resyncs.WithLabelValues("web").Write(&m))
		return m.GetCounter().GetValue()
	}
	before := current("before the failover")
	start("ctl-b")
	var was []float64
	for _, d := range muxes {
		was = append(was, resyncs(d))
	}
	stopA()
	waitLeader("ctl-b")
	submit(controller.Request{Op: controller.OpSetWeight, Instance: "web", ID: 1025, Weight: 3})
	current("after the failover")
	time.Sleep(time.Second) // a second incarnation would follow within milliseconds
	after := current("a second after the failover")
	if after.Incarnation <= before.Incarnation {
		t.Fatalf("store at %v after the failover, no new incarnation after %v", after, before)
	}
	for i, d := range muxes {
		if n := resyncs(d) - was[i]; n != 1 {
			t.Errorf("mux %d loaded %v whole tables for one failover, want 1", i, n)
		}
	}
	t.Logf("failover: %v → %v", before, after)
}
