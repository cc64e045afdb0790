package muxd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/apiutil"
	bgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// BGPPeer is a router the mux announces its VIPs to.
type BGPPeer struct {
	Addr netip.Addr
	ASN  uint32
	Port uint16 // 0: BGP's port, 179
}

// ParseBGPPeer reads ADDR:ASN, e.g. 198.18.0.254:65000, or [ADDR]:ASN for
// an IPv6 router, e.g. [2001:db8::fe]:65000.
func ParseBGPPeer(s string) (BGPPeer, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return BGPPeer{}, fmt.Errorf("BGP peer %q: want ADDR:ASN (an IPv6 router in brackets: [2001:db8::fe]:65000)", s)
	}
	host := s[:i]
	bracketed := strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")
	if bracketed {
		host = host[1 : len(host)-1]
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" || a.Is4In6() || a.Is6() != bracketed {
		return BGPPeer{}, fmt.Errorf("BGP peer %q: %q is not an IPv4 address nor a bracketed IPv6 one", s, s[:i])
	}
	asn, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil || asn == 0 {
		return BGPPeer{}, fmt.Errorf("BGP peer %q: AS number must be 1–4294967295", s)
	}
	return BGPPeer{Addr: a, ASN: uint32(asn)}, nil
}

// BGPOptions configure the mux's BGP speaker.
type BGPOptions struct {
	ASN      uint32
	RouterID netip.Addr // default: NextHop
	NextHop  netip.Addr // the mux's own IPv4 address: routers send IPv4 VIP traffic here
	// NextHop6 is the mux's own IPv6 address, the next hop of its IPv6
	// VIPs. With it every session also carries the IPv6 unicast family
	// (multiprotocol BGP, RFC 4760), so one session per router serves
	// both; without it IPv6 VIPs cannot be announced.
	NextHop6 netip.Addr
	Peers    []BGPPeer
	// HoldTime bounds how long routers keep sending to a mux that died
	// without a word (interface down, crash); keepalives go every third
	// of it. BGP's minimum is 3 s; default 9 s.
	HoldTime time.Duration
	Log      *slog.Logger
}

// Announcer is an embedded GoBGP speaker that announces host routes to
// VIPs (/32, and /128 in the IPv6 unicast family) with the mux as next
// hop. It only originates routes, never installs any, and does not listen:
// it connects to its peers.
type Announcer struct {
	opts BGPOptions
	srv  *server.BgpServer

	mu        sync.Mutex
	announced map[netip.Addr]*api.Path
	closed    bool
}

// StartBGP starts the speaker and its peerings. Nothing is announced until Set.
func StartBGP(ctx context.Context, o BGPOptions) (*Announcer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if !o.RouterID.IsValid() {
		o.RouterID = o.NextHop
	}
	if o.HoldTime == 0 {
		o.HoldTime = 9 * time.Second
	}
	if o.HoldTime < 3*time.Second {
		return nil, fmt.Errorf("bgp: hold time %v is below BGP's minimum of 3s", o.HoldTime)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &Announcer{opts: o, announced: map[netip.Addr]*api.Path{},
		srv: server.NewBgpServer(server.LoggerOption(slogAdapter{o.Log.With("component", "bgp")}))}
	go a.srv.Serve()
	err := a.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: o.ASN, RouterId: o.RouterID.String(), ListenPort: -1, // connect only
	}})
	if err != nil {
		a.srv.Stop()
		return nil, fmt.Errorf("bgp: %w", err)
	}
	hold := uint64(o.HoldTime / time.Second)
	for _, p := range o.Peers {
		local := o.NextHop
		if p.Addr.Is6() {
			local = o.NextHop6
		}
		err := a.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
			Conf:      &api.PeerConf{NeighborAddress: p.Addr.String(), PeerAsn: p.ASN},
			AfiSafis:  o.families(),
			Transport: &api.Transport{LocalAddress: local.String(), RemotePort: uint32(p.Port)},
			Timers: &api.Timers{Config: &api.TimersConfig{
				HoldTime: hold, KeepaliveInterval: max(hold/3, 1), ConnectRetry: 1,
			}},
		}})
		if err != nil {
			a.srv.Stop()
			return nil, fmt.Errorf("bgp: peer %v: %w", p.Addr, err)
		}
	}
	return a, nil
}

// Set announces exactly these VIPs: new ones are announced, others withdrawn.
func (a *Announcer) Set(ctx context.Context, vips []netip.Addr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	var errs []error
	for vip, p := range a.announced {
		if !slices.Contains(vips, vip) {
			if err := a.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Path: p}); err != nil {
				errs = append(errs, fmt.Errorf("bgp: withdrawing %v: %w", vip, err))
				continue
			}
			delete(a.announced, vip)
			a.opts.Log.Info("bgp: withdrawn", "vip", vip)
		}
	}
	for _, vip := range vips {
		if _, ok := a.announced[vip]; ok {
			continue
		}
		p, err := a.path(vip)
		if err == nil {
			_, err = a.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("bgp: announcing %v: %w", vip, err))
			continue
		}
		a.announced[vip] = p
		hop := a.opts.NextHop
		if vip.Is6() {
			hop = a.opts.NextHop6
		}
		a.opts.Log.Info("bgp: announced", "vip", vip, "next_hop", hop)
	}
	return errors.Join(errs...)
}

func (a *Announcer) path(vip netip.Addr) (*api.Path, error) {
	origin := bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)
	switch {
	case vip.Is4() && !a.opts.NextHop.IsValid():
		return nil, fmt.Errorf("VIP %v is IPv4 but the mux has no IPv4 address to announce as its next hop", vip)
	case vip.Is4():
		return apiutil.NewPath(bgp.NewIPAddrPrefix(32, vip.String()), false, []bgp.PathAttributeInterface{
			origin, bgp.NewPathAttributeNextHop(a.opts.NextHop.String()),
		}, time.Now())
	case !a.opts.NextHop6.IsValid():
		return nil, fmt.Errorf("VIP %v is IPv6 but the mux has no IPv6 address to announce as its next hop (--addr6, or one on the interface)", vip)
	}
	// IPv6 routes travel in MP_REACH_NLRI, whose next hop is the mux's
	// IPv6 address; the classic NEXT_HOP attribute is IPv4 only.
	nlri := bgp.NewIPv6AddrPrefix(128, vip.String())
	return apiutil.NewPath(nlri, false, []bgp.PathAttributeInterface{
		origin, bgp.NewPathAttributeMpReachNLRI(a.opts.NextHop6.String(), []bgp.AddrPrefixInterface{nlri}),
	}, time.Now())
}

// Established counts the peers whose session is up.
func (a *Announcer) Established(ctx context.Context) (int, error) {
	n := 0
	err := a.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		if p.GetState().GetSessionState() == api.PeerState_ESTABLISHED {
			n++
		}
	})
	return n, err
}

// Close withdraws every route, then ends the sessions with a Cease
// notification, so routers stop sending at once rather than after the
// hold time.
func (a *Announcer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := a.Set(ctx, nil); err != nil {
		a.opts.Log.Warn("bgp: withdrawing on close", "error", err)
	}
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.srv.Stop()
}

// AnnounceWhileHealthy keeps the announced VIPs equal to the VIPs of the
// instances the daemon forwards, less those of instances withdrawn for
// being behind the store (health.go), checking every interval until ctx
// ends. A store outage alone withdraws nothing: see docs/control-plane.md,
// "Health and BGP policy".
func (d *Daemon) AnnounceWhileHealthy(ctx context.Context, a *Announcer, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastErr string
	for {
		err := a.Set(ctx, d.announceVIPs())
		d.observeBGP(ctx, a) // bgp_metrics.go
		if msg := fmt.Sprint(err); err != nil && msg != lastErr {
			log.Warn("bgp", "error", err)
			lastErr = msg
		} else if err == nil {
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// VIPs are the VIPs of every instance the daemon forwards, sorted.
func (d *Daemon) VIPs() []netip.Addr { return d.vips(func(string) bool { return true }) }

// announceVIPs are the VIPs to announce: those of every instance forwarded
// except instances the mux is too long behind on.
func (d *Daemon) announceVIPs() []netip.Addr {
	return d.vips(func(name string) bool { return !d.health.withdrawn(name) })
}

func (d *Daemon) vips(keep func(instance string) bool) []netip.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	var vips []netip.Addr
	for name, in := range d.instances {
		if !keep(name) {
			continue
		}
		for _, v := range in.VIPs {
			if !slices.Contains(vips, v) {
				vips = append(vips, v)
			}
		}
	}
	slices.SortFunc(vips, netip.Addr.Compare)
	return vips
}

// slogAdapter sends GoBGP's log lines to slog, dropping its debug chatter.
type slogAdapter struct{ l *slog.Logger }

func (s slogAdapter) args(f bgplog.Fields) []any {
	out := make([]any, 0, 2*len(f))
	for k, v := range f {
		out = append(out, k, v)
	}
	return out
}
func (s slogAdapter) Panic(msg string, f bgplog.Fields) { s.l.Error(msg, s.args(f)...); panic(msg) }
func (s slogAdapter) Fatal(msg string, f bgplog.Fields) { s.l.Error(msg, s.args(f)...); panic(msg) }
func (s slogAdapter) Error(msg string, f bgplog.Fields) { s.l.Error(msg, s.args(f)...) }
func (s slogAdapter) Warn(msg string, f bgplog.Fields)  { s.l.Warn(msg, s.args(f)...) }
func (s slogAdapter) Info(msg string, f bgplog.Fields)  { s.l.Info(msg, s.args(f)...) }
func (s slogAdapter) Debug(string, bgplog.Fields)       {}
func (s slogAdapter) SetLevel(bgplog.LogLevel)          {}
func (s slogAdapter) GetLevel() bgplog.LogLevel         { return bgplog.InfoLevel }
