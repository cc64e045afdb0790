package muxd

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// testRouter is a GoBGP speaker on 127.0.0.1 (a free port) standing for the
// router the mux announces to: passive, accepting the mux at 127.0.0.2.
type testRouter struct {
	srv  *server.BgpServer
	port uint16
}

func startTestRouter(t *testing.T) *testRouter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := server.NewBgpServer()
	go s.Serve()
	t.Cleanup(s.Stop)
	ctx := context.Background()
	must(t, s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 65000, RouterId: "127.0.0.1",
		ListenPort: int32(port), ListenAddresses: []string{"127.0.0.1"}}}))
	must(t, s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: "127.0.0.2", PeerAsn: 65001},
		Transport: &api.Transport{PassiveMode: true, LocalAddress: "127.0.0.1"},
		Timers:    &api.Timers{Config: &api.TimersConfig{HoldTime: 9, KeepaliveInterval: 3}},
	}}))
	return &testRouter{srv: s, port: uint16(port)}
}

// peer is how the mux's announcer reaches this router.
func (r *testRouter) peer() BGPPeer {
	return BGPPeer{Addr: netip.MustParseAddr("127.0.0.1"), ASN: 65000, Port: r.port}
}

// routes are the /32 prefixes the router has learned.
func (r *testRouter) routes(t *testing.T) map[string]bool {
	got := map[string]bool{}
	err := r.srv.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
		Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}}, func(d *api.Destination) {
		got[d.GetPrefix()] = true
	})
	must(t, err)
	return got
}

// has waits up to within for the router to hold (or lack) the VIP's route.
func (r *testRouter) has(t *testing.T, vip netip.Addr, want bool, within time.Duration) bool {
	prefix := vip.String() + "/" + strconv.Itoa(32)
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if r.routes(t)[prefix] == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
