package muxd

import (
	"context"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/prometheus/client_golang/prometheus"
)

// newBGPSessionGauge is the BGP session state per configured router: what
// an operator checks first when a mux gets no traffic.
func newBGPSessionGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_bgp_session_up",
		Help: "1 while the BGP session with the router (peer address) is established, 0 otherwise; absent without --bgp-peer."}, []string{"peer"})
}

// Sessions reports, per configured peer address, whether its session is
// established.
func (a *Announcer) Sessions(ctx context.Context) (map[string]bool, error) {
	up := map[string]bool{}
	err := a.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		addr := p.GetConf().GetNeighborAddress()
		up[addr] = p.GetState().GetSessionState() == api.PeerState_ESTABLISHED
	})
	return up, err
}

// observeBGP sets the session gauge from the announcer.
func (d *Daemon) observeBGP(ctx context.Context, a *Announcer) {
	if d.bgpUp == nil {
		return
	}
	up, err := a.Sessions(ctx)
	if err != nil {
		return // the next tick tries again; the speaker is stopping or busy
	}
	for peer, ok := range up {
		v := 0.0
		if ok {
			v = 1
		}
		d.bgpUp.WithLabelValues(peer).Set(v)
	}
}
