package forwarding

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

func TestServerPackRoundTrip(t *testing.T) {
	s := Server{Addr: netip.MustParseAddr("198.18.0.10"), State: Retired}
	got, ok := UnpackServer(s.Pack())
	if !ok || got != s {
		t.Fatalf("server %+v → %+v", s, got)
	}
	if w := s.Pack(); w != 0x02_0a0012c6 {
		t.Fatalf("server word %#x: layout changed", w)
	}
	if _, ok := UnpackServer(0); ok {
		t.Fatal("empty word unpacked as a server")
	}
	// An IPv6 server's word: the address's last four bytes and the state,
	// as the data plane's IPv6 server table expects beside the address.
	if w := (Server{Addr: netip.MustParseAddr("2001:db8::c612:a"), State: Active}).Pack(); w != 0x01_0a0012c6 {
		t.Fatalf("IPv6 server word %#x", w)
	}
}

func twoServerTable() *Table {
	t := NewTable(4)
	t.Servers[1025] = Server{Addr: netip.MustParseAddr("198.18.0.10"), State: Active}
	t.Servers[1026] = Server{Addr: netip.MustParseAddr("198.18.0.11"), State: Active}
	for i := range t.Buckets {
		t.Buckets[i] = Bucket{Current: 1025 + ServerID(i%2)}
	}
	return t
}

func TestApply(t *testing.T) {
	tab := twoServerTable()
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	d := &Delta{Generation: 1,
		Servers: []ServerChange{{ID: 1027, Server: Server{Addr: netip.MustParseAddr("198.18.0.12"), State: Active}}},
		Buckets: []BucketChange{{Index: 0, Bucket: Bucket{Current: 1027, History: Chain{1025}, Changed: 100}}}}
	if err := tab.Apply(d); err != nil {
		t.Fatal(err)
	}
	if tab.Generation != 1 || tab.Buckets[0].Current != 1027 {
		t.Fatalf("not applied: %+v", tab)
	}
	// Retiring 1025 is fine: it only remains as a previous owner.
	d = &Delta{Generation: 2, Servers: []ServerChange{{ID: 1025, Server: Server{Addr: netip.MustParseAddr("198.18.0.10"), State: Retired}}},
		Buckets: []BucketChange{{Index: 2, Bucket: Bucket{Current: 1026, History: Chain{1025}, Changed: 200}}}}
	if err := tab.Apply(d); err != nil {
		t.Fatal(err)
	}
	bad := map[string]*Delta{
		"skips a generation":      {Generation: 4},
		"same generation again":   {Generation: 2},
		"bucket outside":          {Generation: 3, Buckets: []BucketChange{{Index: 4, Bucket: Bucket{Current: 1026}}}},
		"owner unknown":           {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1099}}}},
		"owner retired":           {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1025}}}},
		"previous listed twice":   {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1027, History: Chain{1026, 1026}}}}},
		"hole in history":         {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1027, History: Chain{0, 1026}}}}},
		"unknown older owner":     {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1027, History: Chain{1026, 1099}}}}},
		"previous equals owner":   {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{Current: 1026, History: Chain{1026}}}}},
		"previous without owner":  {Generation: 3, Buckets: []BucketChange{{Index: 1, Bucket: Bucket{History: Chain{1026}}}}},
		"remove a previous owner": {Generation: 3, Servers: []ServerChange{{ID: 1025, Remove: true}}},
		"remove an owner":         {Generation: 3, Servers: []ServerChange{{ID: 1027, Remove: true}}},
		"retire an owner":         {Generation: 3, Servers: []ServerChange{{ID: 1026, Server: Server{Addr: netip.MustParseAddr("198.18.0.11"), State: Retired}}}},
		"id below 1025":           {Generation: 3, Servers: []ServerChange{{ID: 1024, Server: Server{Addr: netip.MustParseAddr("198.18.0.13"), State: Active}}}},
		"ipv6 server":             {Generation: 3, Servers: []ServerChange{{ID: 1030, Server: Server{Addr: netip.MustParseAddr("2001:db8::1"), State: Active}}}},
		"unknown state":           {Generation: 3, Servers: []ServerChange{{ID: 1030, Server: Server{Addr: netip.MustParseAddr("198.18.0.13"), State: 9}}}},
	}
	for name, d := range bad {
		before := tab.Clone()
		err := tab.Apply(d)
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrGeneration) {
			t.Errorf("%s: %v", name, err)
		}
		if tab.Generation != before.Generation || tab.Buckets[1] != before.Buckets[1] || len(tab.Servers) != len(before.Servers) {
			t.Errorf("%s: table changed by a rejected delta", name)
		}
	}
	// Clearing the previous owner and removing it in one delta is allowed.
	d = &Delta{Generation: 3, Servers: []ServerChange{{ID: 1025, Remove: true}},
		Buckets: []BucketChange{{Index: 0, Bucket: Bucket{Current: 1027}}, {Index: 2, Bucket: Bucket{Current: 1026}}}}
	if err := tab.Apply(d); err != nil {
		t.Fatal(err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestInstanceValidate(t *testing.T) {
	good := Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 443, Buckets: 1000, ChainWindow: 4 * time.Minute}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	mutations := map[string]func(*Instance){
		"bad name":        func(i *Instance) { i.Name = "Web Site" },
		"strategy":        func(i *Instance) { i.Strategy = "random" },
		"no vip":          func(i *Instance) { i.VIPs = nil },
		"loopback v6 vip": func(i *Instance) { i.VIPs = []netip.Addr{netip.MustParseAddr("::1")} },
		"duplicate vip":   func(i *Instance) { i.VIPs = append(i.VIPs, i.VIPs[0]) },
		"port 0":          func(i *Instance) { i.PortLow = 0 },
		"ports reversed":  func(i *Instance) { i.PortLow, i.PortHigh = 443, 80 },
		"port above 1024": func(i *Instance) { i.PortHigh = 1025 },
		"no buckets":      func(i *Instance) { i.Buckets = 0 },
		"negative window": func(i *Instance) { i.ChainWindow = -time.Second },
	}
	for name, mutate := range mutations {
		in := good
		in.VIPs = append([]netip.Addr(nil), good.VIPs...)
		mutate(&in)
		if err := in.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestChain(t *testing.T) {
	for _, tc := range []struct {
		c   Chain
		len int
	}{{Chain{}, 0}, {Chain{1025}, 1}, {Chain{1025, 1026, 1027}, 3}, {Chain{1, 2, 3, 4, 5, 6}, MaxChain}} {
		if got := tc.c.Len(); got != tc.len {
			t.Errorf("%v: Len %d, want %d", tc.c, got, tc.len)
		}
	}
	c := Chain{1025, 1026}
	if !c.Contains(1026) || c.Contains(1027) || c.Contains(NoServer) {
		t.Fatalf("Contains wrong on %v", c)
	}
}

func TestChainLenConfig(t *testing.T) {
	in := Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 10}
	if in.ChainLen() != DefaultMaxChainLen {
		t.Fatalf("default K %d", in.ChainLen())
	}
	for k := 1; k <= MaxChain; k++ {
		in.MaxChainLen = k
		if err := in.Validate(); err != nil || in.ChainLen() != k {
			t.Fatalf("K=%d: %v, ChainLen %d", k, err, in.ChainLen())
		}
	}
	for _, k := range []int{-1, MaxChain + 1} {
		in.MaxChainLen = k
		if err := in.Validate(); !errors.Is(err, ErrConfig) {
			t.Fatalf("K=%d accepted: %v", k, err)
		}
	}
}
