package controller

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestRequestRejections sends hostile requests to a running controller the
// way `beamer ctl` does (bypassing ctl's own checks, as anyone able to write
// a request could) and checks each is refused with its exact message and
// changes nothing.
func TestRequestRejections(t *testing.T) {
	root := newRoot()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, shared, root, RunOptions{Identity: "v", ReconcileEvery: time.Hour}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	tctx := storetest.Context(t)
	submit := func(r Request) error { return Submit(tctx, shared, root, r, 20*time.Second) }
	ip := netip.MustParseAddr
	inst := func(name, vip string, lo, hi uint16, buckets uint32, s forwarding.Strategy) *forwarding.Instance {
		return &forwarding.Instance{Name: name, Strategy: s, VIPs: []netip.Addr{ip(vip)}, PortLow: lo, PortHigh: hi,
			Buckets: buckets, ChainWindow: forwarding.DefaultChainWindow}
	}
	beamer, maglev := forwarding.StrategyBeamer, forwarding.StrategyMaglev
	for _, r := range []Request{
		{Op: OpCreateInstance, Config: inst("web", "192.0.2.1", 80, 80, 100, beamer)},
		{Op: OpAddDIP, Instance: "web", ID: 1025, Addr: ip("10.0.4.1"), Weight: 1},
		{Op: OpCreateInstance, Config: inst("api", "192.0.2.2", 80, 80, 100, beamer)},
	} {
		if err := submit(r); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	cases := []struct {
		name string
		r    Request
		want string
	}{
		{"VIP of another instance, same port", Request{Op: OpCreateInstance, Config: inst("shop", "192.0.2.1", 80, 80, 100, beamer)},
			`bad request: VIP 192.0.2.1 is already a VIP of instance "web" (one instance per VIP: muxes find the instance by destination address)`},
		{"VIP of another instance, other ports", Request{Op: OpCreateInstance, Config: inst("shop", "192.0.2.1", 443, 443, 100, beamer)},
			`bad request: VIP 192.0.2.1 is already a VIP of instance "web" (one instance per VIP: muxes find the instance by destination address)`},
		{"VIP is a DIP", Request{Op: OpCreateInstance, Config: inst("shop", "10.0.4.1", 80, 80, 100, beamer)},
			`bad request: VIP 10.0.4.1 is the address of DIP 1025 of instance "web"`},
		{"broadcast VIP", Request{Op: OpCreateInstance, Config: inst("shop", "255.255.255.255", 80, 80, 100, beamer)},
			`bad request: invalid instance configuration "shop": VIP 255.255.255.255 is the broadcast address: a VIP must be a unicast IPv4 or IPv6 address`},
		{"loopback VIP", Request{Op: OpCreateInstance, Config: inst("shop", "127.0.0.1", 80, 80, 100, beamer)},
			`bad request: invalid instance configuration "shop": VIP 127.0.0.1 is a loopback address (127.0.0.0/8): a VIP must be a unicast IPv4 or IPv6 address`},
		{"multicast VIP", Request{Op: OpCreateInstance, Config: inst("shop", "239.1.2.3", 80, 80, 100, beamer)},
			`bad request: invalid instance configuration "shop": VIP 239.1.2.3 is a multicast address (224.0.0.0/4): a VIP must be a unicast IPv4 or IPv6 address`},
		{"one bucket", Request{Op: OpCreateInstance, Config: inst("shop", "192.0.2.9", 80, 80, 1, beamer)},
			`bad request: invalid instance configuration "shop": bucket count 1 must be in 2–16777216 (B must exceed the number of DIPs; about 100 per DIP is a good size)`},
		{"non-prime maglev size", Request{Op: OpCreateInstance, Config: inst("shop", "192.0.2.9", 80, 80, 100, maglev)},
			`bad request: invalid instance configuration "shop": maglev table size 100 is not prime (Maglev needs a prime size): the nearest primes are 97 and 101`},
		{"broadcast DIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("255.255.255.255"), Weight: 1},
			`bad request: DIP address 255.255.255.255 is the broadcast address: a server needs a unicast IPv4 or IPv6 address`},
		{"multicast DIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("224.0.0.5"), Weight: 1},
			`bad request: DIP address 224.0.0.5 is a multicast address (224.0.0.0/4): a server needs a unicast IPv4 or IPv6 address`},
		{"loopback DIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("127.0.0.1"), Weight: 1},
			`bad request: DIP address 127.0.0.1 is a loopback address (127.0.0.0/8): a server needs a unicast IPv4 or IPv6 address`},
		{"unspecified DIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("0.0.0.0"), Weight: 1},
			`bad request: DIP address 0.0.0.0 is the unspecified address: a server needs a unicast IPv4 or IPv6 address`},
		{"link-local DIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("169.254.1.1"), Weight: 1},
			`bad request: DIP address 169.254.1.1 is a link-local address (169.254.0.0/16): a server needs a unicast IPv4 or IPv6 address`},
		{"no DIP address", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Weight: 1},
			`bad request: DIP address missing: a server needs a unicast IPv4 or IPv6 address`},
		{"IPv6 DIP in an IPv4 instance", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("2001:db8::10"), Weight: 1},
			`bad request: DIP address 2001:db8::10 is IPv6 but instance "web" is IPv4: an instance's VIPs and servers share one family (direct server return answers from the VIP over the server's own routes)`},
		{"IPv6 instance with IP-in-IP", Request{Op: OpCreateInstance, Config: inst("shop", "2001:db8:100::1", 80, 80, 100, beamer)},
			`bad request: invalid instance configuration "shop": an IPv6 instance needs encap gue (IP-in-IP carries Beamer's fields in an IPv4 option)`},
		{"IPv6 maglev instance", Request{Op: OpCreateInstance, Config: inst("shop", "2001:db8:100::1", 80, 80, 101, maglev)},
			`bad request: invalid instance configuration "shop": strategy "maglev" does not forward IPv6: an IPv6 instance needs strategy beamer`},
		{"mixed-family VIPs", Request{Op: OpCreateInstance, Config: &forwarding.Instance{Name: "shop", Strategy: beamer,
			VIPs: []netip.Addr{ip("192.0.2.9"), ip("2001:db8:100::1")}, PortLow: 80, PortHigh: 80, Buckets: 100}},
			`bad request: invalid instance configuration "shop": VIPs 192.0.2.9 and 2001:db8:100::1 are of different families: an instance is all IPv4 or all IPv6 (create one instance per family)`},
		{"DIP is its own instance's VIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("192.0.2.1"), Weight: 1},
			`bad request: DIP address 192.0.2.1 is a VIP of instance "web"`},
		{"DIP is another instance's VIP", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("192.0.2.2"), Weight: 1},
			`bad request: DIP address 192.0.2.2 is a VIP of instance "api"`},
		{"weight 0", Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: ip("10.0.4.6"), Weight: 0},
			`bad request: weight 0 must be in 1–1000000 (weight 0 is not a way to take a DIP out: drain or remove it, so its connections finish)`},
		{"set weight 0", Request{Op: OpSetWeight, Instance: "web", ID: 1025, Weight: 0},
			`bad request: weight 0 must be in 1–1000000 (weight 0 is not a way to take a DIP out: drain or remove it, so its connections finish)`},
	}
	for _, c := range cases {
		err := submit(c.r)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
	// Nothing of it reached the store.
	names, err := New(shared, root, Options{}).Instances(tctx)
	if err != nil || len(names) != 2 {
		t.Fatalf("instances after the rejections: %v, %v", names, err)
	}
	v, err := Show(tctx, shared, root, "web", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.DIPs) != 1 || v.DIPs[0].Weight != 1 {
		t.Fatalf("DIPs of web after the rejections: %+v", v.DIPs)
	}
	// The same DIP may serve a second instance.
	if err := submit(Request{Op: OpAddDIP, Instance: "api", ID: 1025, Addr: ip("10.0.4.1"), Weight: 1}); err != nil {
		t.Fatalf("a server in two instances: %v", err)
	}
	// A controller that has loaded nothing yet (just elected) reads the
	// claims from the store and refuses the same way (the server is now in
	// api and web; api is read first).
	fresh := New(shared, root, Options{})
	err = fresh.CreateInstance(tctx, inst("shop", "10.0.4.1", 80, 80, 100, beamer))
	if want := `bad request: VIP 10.0.4.1 is the address of DIP 1025 of instance "api"`; err == nil || err.Error() != want {
		t.Errorf("uncached controller:\n got %v\nwant %s", err, want)
	}
	checkInvariants(t, root)
}
