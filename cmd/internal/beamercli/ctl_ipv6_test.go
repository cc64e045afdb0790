package beamercli

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// TestCtlIPv6: ctl list, show and lookup read an IPv6 instance: its VIP
// and servers print as IPv6, a client [ADDR]:PORT maps to the bucket of
// the mux's IPv6 flow hash, and a client of the other family is refused.
func TestCtlIPv6(t *testing.T) {
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); e.Close() })
	const root = "/optest6"
	c := controller.New(s, root, controller.Options{Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vip := netip.MustParseAddr("2001:db8:100::1")
	in := &forwarding.Instance{Name: "web6", Strategy: forwarding.StrategyBeamer, Encap: forwarding.EncapGUE, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	for i, a := range []string{"2001:db8::10", "2001:db8::11"} {
		if err := c.AddDIP(ctx, "web6", forwarding.ServerID(1025+i), netip.MustParseAddr(a), 1); err != nil {
			t.Fatal(err)
		}
	}
	st := ctlAPI(t, s, root)
	if got := ctlOut(t, "ctl", "list", "--api", st); !strings.Contains(got, "web6      2001:db8:100::1") || !strings.Contains(got, "-> 1026  2001:db8::11") {
		t.Errorf("ctl list:\n%s", got)
	}
	if got := ctlOut(t, "ctl", "show", "web6", "--api", st); !strings.Contains(got, "2001:db8:100::1") || !strings.Contains(got, "2001:db8::10") {
		t.Errorf("ctl show:\n%s", got)
	}
	client := netip.MustParseAddrPort("[2001:db8:1::5]:40002")
	f := wire.Flow{Src: client.Addr(), Dst: vip, SrcPort: client.Port(), DstPort: 80, Proto: 6}
	got := ctlOut(t, "ctl", "lookup", "web6", client.String(), "--api", st)
	want := fmt.Sprintf("flow [2001:db8:1::5]:40002 -> [2001:db8:100::1]:80 tcp: hash %#08x, bucket %d of 100", f.Hash(), f.Bucket(100))
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "current server: 102") {
		t.Errorf("ctl lookup:\n%s\nwant it to start with\n%s", got, want)
	}
	if err := run("ctl", "lookup", "web6", "198.18.1.5:40002", "--api", st); err == nil || err.Error() != "client 198.18.1.5 is IPv4 but instance web6 is IPv6" {
		t.Errorf("IPv4 client of an IPv6 instance: %v", err)
	}
	if err := run("ctl", "lookup", "web6", "2001:db8:1::5:40002", "--api", st); err == nil || !strings.Contains(err.Error(), "[2001:db8:1::5]:40000") {
		t.Errorf("unbracketed IPv6 client: %v", err)
	}
}
