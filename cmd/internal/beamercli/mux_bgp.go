package beamercli

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/muxd"
	"github.com/spf13/cobra"
)

// bgpFlags are the mux's BGP options: with --bgp-peer, the mux announces
// its instances' VIPs to routers while it is healthy.
type bgpFlags struct {
	asn      uint32
	routerID string
	peers    []string
	hold     time.Duration
}

func (f *bgpFlags) register(cmd *cobra.Command) {
	cmd.Flags().Uint32Var(&f.asn, "bgp-asn", 0, "the mux's AS number (with --bgp-peer)")
	cmd.Flags().StringVar(&f.routerID, "bgp-router-id", "", "BGP router id (default: the mux address)")
	cmd.Flags().StringSliceVar(&f.peers, "bgp-peer", nil, "router to announce VIPs to, ADDR:ASN or [IPv6]:ASN (repeatable); sessions carry IPv6 unicast too when the mux has an IPv6 address")
	cmd.Flags().DurationVar(&f.hold, "bgp-hold-time", 9*time.Second, "BGP hold time: how long routers keep using a silent mux (≥3s; keepalives every third)")
}

// options are the BGP options, or nil when no peer is given.
func (f *bgpFlags) options(log *slog.Logger) (*muxd.BGPOptions, error) {
	if len(f.peers) == 0 {
		if f.asn != 0 || f.routerID != "" {
			return nil, errors.New("--bgp-asn and --bgp-router-id need at least one --bgp-peer")
		}
		return nil, nil
	}
	if f.asn == 0 {
		return nil, errors.New("--bgp-peer needs --bgp-asn")
	}
	if f.hold < 3*time.Second || f.hold%time.Second != 0 {
		return nil, fmt.Errorf("--bgp-hold-time %v: must be whole seconds, at least 3s", f.hold)
	}
	o := &muxd.BGPOptions{ASN: f.asn, HoldTime: f.hold, Log: log}
	if f.routerID != "" {
		id, err := netip.ParseAddr(f.routerID)
		if err != nil || !id.Is4() {
			return nil, fmt.Errorf("--bgp-router-id %q: want an IPv4 address", f.routerID)
		}
		o.RouterID = id
	}
	for _, s := range f.peers {
		p, err := muxd.ParseBGPPeer(s)
		if err != nil {
			return nil, fmt.Errorf("--bgp-peer: %w", err)
		}
		o.Peers = append(o.Peers, p)
	}
	return o, nil
}
