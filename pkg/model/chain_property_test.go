package model

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// The property test of multi-hop daisy chaining (issue 10.1): random
// sequences of at most K operations — removals, additions, weight changes,
// health failures and recoveries, each one generation as the controller
// publishes it, with the controller's history rules (forwarding.HistoryRules)
// — with connections opened all along on whichever server owned their bucket
// then. After every generation, a packet of every connection goes through
// the model mux and the model agents, hop by hop, and must reach the server
// holding the connection; a packet of no connection must end in a reset (at
// the newest generation) within MaxChain+1 servers — chains cannot loop.
//
// A server that fails its health checks keeps running here (its probes
// fail, its connections live on): its connections must survive too — it
// stays in the histories, behind the running owners.

type propServer struct {
	id      forwarding.ServerID
	addr    netip.Addr
	weight  uint32
	state   string // "active", "removed", "down"
	wasDown bool
}

type propConn struct {
	client netip.AddrPort
	owner  netip.Addr
	id     forwarding.ServerID
}

type propWorld struct {
	rng     *rand.Rand
	k       int
	window  uint32
	now     uint32
	inc     uint32
	servers []*propServer
	table   *forwarding.Table
	conns   []propConn
	owner   map[netip.AddrPort]netip.Addr // client → server holding its connection
	hops    [forwarding.MaxChain + 2]int  // deliveries of live connections by servers crossed
	agents  map[netip.Addr]*Agent
	cfg     forwarding.Instance
	nextID  forwarding.ServerID
	port    uint16
	events  []string
}

const propVIPPort = 80

var propVIP = netip.MustParseAddr("198.18.100.1")

func propAddr(id forwarding.ServerID) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + id - 1025)})
}

func newPropWorld(rng *rand.Rand, k int) *propWorld {
	w := &propWorld{rng: rng, k: k, window: 240, now: 1_763_700_000, inc: 1_763_600_000, owner: map[netip.AddrPort]netip.Addr{},
		agents: map[netip.Addr]*Agent{}, nextID: 1025, port: 20000}
	w.cfg = forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{propVIP},
		PortLow: 80, PortHigh: 80, Buckets: 32 + uint32(rng.IntN(64)), ChainWindow: 240e9, MaxChainLen: k}
	w.table = forwarding.NewTable(int(w.cfg.Buckets))
	w.table.Incarnation = w.inc
	for range 3 + rng.IntN(5) {
		w.add()
	}
	w.publish("start")
	return w
}

func (w *propWorld) add() *propServer {
	s := &propServer{id: w.nextID, addr: propAddr(w.nextID), weight: 1 + uint32(w.rng.IntN(3)), state: "active"}
	w.nextID++
	w.servers = append(w.servers, s)
	w.agents[s.addr] = w.newAgent(s.addr)
	return s
}

func (w *propWorld) newAgent(addr netip.Addr) *Agent {
	a := &Agent{Addr: addr, VIPs: map[netip.Addr]AgentVIP{propVIP: {Buckets: w.cfg.Buckets, Window: w.window}},
		Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16")}, MaxSkew: 60, MaxGenJump: 1 << 16,
		Changed: map[[2]uint32]uint32{}}
	a.Socket = func(client, vip netip.AddrPort) Socket {
		if vip.Port() != propVIPPort {
			return NoSocket
		}
		if w.owner[client] == addr {
			return Connection
		}
		return Listener
	}
	a.NextHops = func(netip.Addr) NextHop {
		return NextHop{Result: "redirect", DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}}
	}
	return a
}

// publish computes and applies the next generation as the controller's
// plan does: assignment over the live servers, histories by the rules,
// removed servers retired while some history names them.
func (w *propWorld) publish(event string) {
	w.events = append(w.events, event)
	var servers []assign.Server
	down := map[forwarding.ServerID]bool{}
	for _, s := range w.servers {
		switch s.state {
		case "active":
			servers = append(servers, assign.Server{ID: s.id, Weight: s.weight})
		case "down":
			down[s.id] = true
			servers = append(servers, assign.Server{ID: s.id, Weight: 0})
		}
	}
	d := &forwarding.Delta{Generation: w.table.Generation + 1}
	for _, s := range w.servers {
		if _, ok := w.table.Servers[s.id]; !ok && s.state != "removed" {
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: s.id, Server: forwarding.Server{Addr: s.addr, State: forwarding.Active}})
		}
	}
	rules := &forwarding.HistoryRules{K: w.k, Window: w.window, Now: w.now, Down: func(id forwarding.ServerID) bool { return down[id] }}
	d.Buckets = rules.Plan(w.table.Buckets, assign.RebalanceLimited(w.table.Buckets, servers, w.now, w.k))
	named := map[forwarding.ServerID]bool{}
	after := append([]forwarding.Bucket(nil), w.table.Buckets...)
	for _, c := range d.Buckets {
		after[c.Index] = c.Bucket
	}
	for _, b := range after {
		for _, id := range b.History[:b.History.Len()] {
			named[id] = true
		}
	}
	for _, s := range w.servers {
		cur, inTable := w.table.Servers[s.id]
		if s.state != "removed" || !inTable {
			continue
		}
		if named[s.id] && cur.State != forwarding.Retired {
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: s.id, Server: forwarding.Server{Addr: s.addr, State: forwarding.Retired}})
		} else if !named[s.id] {
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: s.id, Remove: true})
		}
	}
	if err := w.table.Apply(d); err != nil {
		panic(fmt.Sprintf("%s: %v", event, err))
	}
}

func (w *propWorld) pick(state string) *propServer {
	var c []*propServer
	for _, s := range w.servers {
		if s.state == state {
			c = append(c, s)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[w.rng.IntN(len(c))]
}

func (w *propWorld) count(state string) int {
	n := 0
	for _, s := range w.servers {
		if s.state == state {
			n++
		}
	}
	return n
}

// operate applies one random operation and publishes its generation.
func (w *propWorld) operate() {
	w.now += 1 + uint32(w.rng.IntN(30))
	for {
		switch w.rng.IntN(5) {
		case 0: // ctl remove-dip
			if w.count("active") > 1 {
				s := w.pick("active")
				s.state = "removed"
				w.publish(fmt.Sprintf("remove %d", s.id))
				return
			}
		case 1: // ctl add-dip
			if w.nextID < 1025+40 {
				s := w.add()
				w.publish(fmt.Sprintf("add %d", s.id))
				return
			}
		case 2: // ctl weight
			s := w.pick("active")
			s.weight = 1 + uint32(w.rng.IntN(4))
			w.publish(fmt.Sprintf("weight %d=%d", s.id, s.weight))
			return
		case 3: // health failure
			if w.count("active") > 1 {
				s := w.pick("active")
				s.state, s.wasDown = "down", true
				w.publish(fmt.Sprintf("down %d", s.id))
				return
			}
		case 4: // health recovery
			if s := w.pick("down"); s != nil {
				s.state = "active"
				w.publish(fmt.Sprintf("up %d", s.id))
				return
			}
		}
	}
}

// open starts n connections, each on its bucket's owner now.
func (w *propWorld) open(n int) {
	for range n {
		w.port++
		client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 200, byte(1 + w.rng.IntN(250))}), w.port)
		f := wire.Flow{Src: client.Addr(), Dst: propVIP, SrcPort: client.Port(), DstPort: propVIPPort, Proto: wire.ProtoTCP}
		b := w.table.Buckets[f.Bucket(w.cfg.Buckets)]
		if b.Current == forwarding.NoServer {
			continue
		}
		addr := w.table.Servers[b.Current].Addr
		w.conns = append(w.conns, propConn{client: client, owner: addr, id: b.Current})
		w.owner[client] = addr
	}
}

func (w *propWorld) server(id forwarding.ServerID) *propServer {
	for _, s := range w.servers {
		if s.id == id {
			return s
		}
	}
	return nil
}

// deliver sends one ACK of client through the mux and the agents. It
// returns the server that kept the packet (invalid if none), the counter of
// the last decision and the servers visited.
func (w *propWorld) deliver(client netip.AddrPort) (netip.Addr, string, []netip.Addr) {
	for _, a := range w.agents {
		a.Now = w.now
	}
	m := &Mux{Addr: netip.MustParseAddr("198.18.0.1"), VIPs: map[netip.Addr]*VIP{propVIP: {Instance: w.cfg, Table: w.table,
		Generation: w.table.Generation, Incarnation: w.table.Incarnation}},
		NextHops: func(netip.Addr) NextHop {
			return NextHop{Result: "tx", DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 3}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 4}}
		}}
	seg := wiretest.Segment{Flow: wire.Flow{Src: client.Addr(), Dst: propVIP, SrcPort: client.Port(), DstPort: propVIPPort, Proto: wire.ProtoTCP},
		Flags: wiretest.ACK, Seq: 1, Ack: 1}
	r := m.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4()))
	var path []netip.Addr
	for hop := 0; hop <= forwarding.MaxChain+1; hop++ {
		if r.Action != TX && r.Action != Redirect {
			return netip.Addr{}, r.Counter, path
		}
		dst := netip.AddrFrom4([4]byte(r.Output[14+16 : 14+20]))
		a := w.agents[dst]
		if a == nil {
			return netip.Addr{}, "no agent at " + dst.String(), path
		}
		path = append(path, dst)
		r = a.Process(r.Output)
		if r.Action == Pass {
			return dst, r.Counter, path
		}
	}
	return netip.Addr{}, "loop", path
}

// check delivers a packet of every live connection and of a few strays.
// It returns the broken connections, described.
func (w *propWorld) check(t *testing.T, strict bool) []string {
	var broken []string
	for _, c := range w.conns {
		kept, counter, path := w.deliver(c.client)
		if kept != c.owner || (counter != "local_socket" && counter != "to_stack") {
			broken = append(broken, fmt.Sprintf("connection %v on %v: kept by %v (%s) via %v", c.client, c.owner, kept, counter, path))
		}
		if len(path) > forwarding.MaxChain+1 {
			t.Fatalf("connection %v crossed %d servers: %v", c.client, len(path), path)
		}
		w.hops[len(path)]++
	}
	for range 5 {
		w.port++
		stray := netip.AddrPortFrom(netip.MustParseAddr("198.18.201.1"), w.port)
		_, counter, path := w.deliver(stray)
		if counter != "to_stack" || len(path) > forwarding.MaxChain+1 {
			t.Fatalf("stray %v: %s via %v (events %v)", stray, counter, path, w.events)
		}
	}
	if strict && len(broken) > 0 {
		t.Fatalf("K=%d, events %v: %d broken, first: %s", w.k, w.events, len(broken), broken[0])
	}
	return broken
}

func TestChainingProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	scenarios := 300
	if testing.Short() {
		scenarios = 50
	}
	checked := 0
	var hops [forwarding.MaxChain + 2]int
	for range scenarios {
		k := 1 + rng.IntN(forwarding.MaxChain)
		w := newPropWorld(rng, k)
		w.open(20)
		for range k {
			w.operate()
			w.check(t, true)
			w.open(10)
		}
		w.check(t, true)
		checked += len(w.conns)
		for i, n := range w.hops {
			hops[i] += n
		}
	}
	t.Logf("%d scenarios, %d connections checked after every generation; deliveries by servers crossed (1 = owner direct): %v", scenarios, checked, hops[1:])
	if hops[3] == 0 || hops[4] == 0 {
		t.Fatalf("no delivery crossed 3 or 4 servers: the scenarios do not exercise multi-hop chains (%v)", hops)
	}
}

// TestChainingPropertyCanFail runs the same operations with one previous
// owner kept (the paper's single pointer) but K moves, and requires broken
// connections to show: the property test is able to see a break.
func TestChainingPropertyCanFail(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	broken := 0
	for range 100 {
		w := newPropWorld(rng, 1)
		w.open(20)
		for range 4 {
			w.operate()
			w.open(10)
		}
		broken += len(w.check(t, false))
	}
	if broken == 0 {
		t.Fatal("with K=1 and four operations no connection broke: the property test cannot see breaks")
	}
	t.Logf("K=1, four operations: %d connections broke (as expected)", broken)
}
