package scalebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf/link"
)

// xdpMux is a real mux: pkg/node/muxd's daemon with its XDP program attached in
// native mode to a veth in a network namespace of its own, following the
// store on its own connection, exactly as `beamer mux --store` runs.
type xdpMux struct {
	d    *muxd.Daemon
	ns   *netlab.Namespace
	st   *countingStore
	cold time.Duration

	mu      sync.Mutex
	applied []appliedAt
}

// watch records when the mux's data plane runs each new pair (polled every
// millisecond: the daemon has no apply callback).
func (m *xdpMux) watch(ctx context.Context) {
	var last ring.Pair
	for ctx.Err() == nil {
		inc, gen, ok := m.d.Mux().Version(instanceName)
		if p := (ring.Pair{Incarnation: inc, Generation: gen}); ok && p != last {
			last = p
			m.mu.Lock()
			m.applied = append(m.applied, appliedAt{p, time.Now()})
			m.mu.Unlock()
		}
		time.Sleep(time.Millisecond)
	}
}

func (m *xdpMux) reached(p ring.Pair) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.applied {
		if !a.pair.Less(p) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// xdpNet is the muxes' network: each mux's eth0 bridged in a fabric
// namespace whose bridge address is every server's next hop (the route
// to 198.18.0.0/15), so that all 64K servers resolve.
type xdpNet struct {
	lab   *netlab.Lab
	pass  []link.Link
	muxes []*xdpMux
	dir   string
}

var fabricGW = netip.MustParseAddr("198.19.1.1")

// startXDPMuxes starts n muxes and cold-starts each, one after the other
// (each timed: store read, verification, maps filled).
func startXDPMuxes(ctx context.Context, n int, open func(context.Context) (store.Store, error), o *Options) (*xdpNet, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("XDP muxes need root (BPF programs, network namespaces): run as root or with --xdp-muxes 0")
	}
	lab, err := netlab.New("scale")
	if err != nil {
		return nil, err
	}
	x := &xdpNet{lab: lab}
	if x.dir, err = os.MkdirTemp("", "beamer-scalebench-xdp-"); err != nil {
		x.close()
		return nil, err
	}
	fabric, err := lab.Namespace("fabric")
	if err != nil {
		x.close()
		return nil, err
	}
	var ports []string
	var nss []*netlab.Namespace
	for i := range n {
		ns, err := lab.Namespace(fmt.Sprintf("mux%d", i))
		if err != nil {
			x.close()
			return nil, err
		}
		addr := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, 1, byte(10 + i)}), 24)
		port := fmt.Sprintf("m%d", i)
		if err := lab.Veth(ns, "eth0", addr, fabric, port, netip.Prefix{}, 1600); err != nil {
			x.close()
			return nil, err
		}
		ports, nss = append(ports, port), append(nss, ns)
	}
	if err := fabric.Bridge("br0", ports...); err != nil {
		x.close()
		return nil, err
	}
	if err := fabric.AddAddr("br0", netip.PrefixFrom(fabricGW, 24)); err != nil {
		x.close()
		return nil, err
	}
	for _, p := range ports {
		l, err := fabric.AttachXDPPass(p) // receives the mux's XDP_TX frames
		if err != nil {
			x.close()
			return nil, err
		}
		x.pass = append(x.pass, l)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, ns := range nss {
		if _, err := ns.Run("ip", "route", "add", "198.18.0.0/15", "via", fabricGW.String()); err != nil {
			x.close()
			return nil, err
		}
		var d *muxd.Daemon
		err := ns.Do(func() (err error) {
			d, err = muxd.Start(muxd.Options{Interface: "eth0", XDPMode: dataplane.XDPDriver, PinDir: "-",
				StateFile: fmt.Sprintf("%s/mux%d.json", x.dir, i), Log: quiet})
			return err
		})
		if err != nil {
			x.close()
			return nil, fmt.Errorf("XDP mux %d: %w", i, err)
		}
		m := &xdpMux{d: d, ns: ns}
		x.muxes = append(x.muxes, m)
		st, err := open(ctx)
		if err != nil {
			x.close()
			return nil, err
		}
		m.st = &countingStore{Store: st}
		start := time.Now()
		if err := d.Follow(ctx, m.st, "/beamer", instanceName, quiet); err != nil {
			x.close()
			return nil, fmt.Errorf("XDP mux %d: %w", i, err)
		}
		if _, _, ok := d.Mux().Version(instanceName); !ok {
			x.close()
			return nil, fmt.Errorf("XDP mux %d did not load the instance at start", i)
		}
		m.cold = time.Since(start)
		go m.watch(ctx)
		o.logf("  XDP mux %d loaded in %v", i, m.cold.Round(time.Millisecond))
	}
	return x, nil
}

func (x *xdpNet) close() {
	for _, m := range x.muxes {
		m.ns.Do(m.d.Close)
		if m.st != nil {
			m.st.Close()
		}
	}
	for _, l := range x.pass {
		l.Close()
	}
	x.lab.Close()
	if x.dir != "" {
		os.RemoveAll(x.dir)
	}
}
