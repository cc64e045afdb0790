package dataplane

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// The differential tests run random input through the BPF programs and the
// Go model side by side and require the same action, counter and bytes:
// the fixed vectors pin the documented cases, these cover the combinations
// (histories of every length, hops, lists naming the server itself, stale,
// new and forged incarnations and generations) that the model's property
// test proves correct.

func modelNextHops(hops []wiretest.NextHopVector) func(netip.Addr) model.NextHop {
	m := map[netip.Addr]model.NextHop{}
	for _, h := range hops {
		d, _ := net.ParseMAC(h.DstMAC)
		s, _ := net.ParseMAC(h.SrcMAC)
		m[h.Addr] = model.NextHop{Result: h.Result, DstMAC: d, SrcMAC: s}
	}
	return func(a netip.Addr) model.NextHop {
		if h, ok := m[a]; ok {
			return h
		}
		return model.NextHop{Result: "no_route"}
	}
}

// randomMovedBucket is a bucket of a random active owner whose history
// names a random subset of all (0 to MaxChain servers, never the owner).
func randomMovedBucket(rng *rand.Rand, active, all []forwarding.ServerID) forwarding.Bucket {
	bk := forwarding.Bucket{Current: active[rng.IntN(len(active))], Changed: 1_763_000_000 + rng.Uint32N(1000)}
	n := 0
	for _, i := range rng.Perm(len(all))[:rng.IntN(len(all)+1)] {
		if id := all[i]; id != bk.Current && n < forwarding.MaxChain {
			bk.History[n] = id
			n++
		}
	}
	return bk
}

// TestMuxMatchesModel: random deltas give buckets random histories (0–6
// previous owners, retired ones among them) and random resyncs start new
// incarnations; after each, random flows go through the XDP mux and the
// model mux.
func TestMuxMatchesModel(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	s := v.Mux
	table, err := s.Table()
	must(t, err)
	vip := s.Instance.VIPs[0]
	mm := &model.Mux{Addr: s.MuxAddr, NextHops: modelNextHops(s.NextHops),
		VIPs: map[netip.Addr]*model.VIP{vip: {Instance: s.Instance, Table: table, Generation: s.Generation, Incarnation: s.Incarnation}}}
	rng := rand.New(rand.NewPCG(7, 7))
	active := []forwarding.ServerID{1025, 1026, 1027, 1028, 1029, 1030}
	all := append(append([]forwarding.ServerID(nil), active...), 1031)
	client := netip.MustParseAddr("198.18.200.7")
	sent, withHistory := 0, 0
	for g := 0; g < 150; g++ {
		if rng.IntN(20) == 0 { // a resync: new incarnation, the table loaded whole
			next := table.Clone()
			next.Incarnation++
			next.Generation = 1
			must(t, m.SetInstance(s.Instance, next))
			table = next
		} else {
			d := &forwarding.Delta{Generation: table.Generation + 1}
			for range 1 + rng.IntN(4) {
				d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(rng.IntN(int(s.Instance.Buckets))), Bucket: randomMovedBucket(rng, active, all)})
			}
			must(t, m.ApplyDelta("web", d))
			must(t, table.Apply(d))
		}
		mm.VIPs[vip].Table, mm.VIPs[vip].Generation, mm.VIPs[vip].Incarnation = table, table.Generation, table.Incarnation
		for range 6 {
			seg := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: uint16(30000 + rng.IntN(30000)), DstPort: 80, Proto: wire.ProtoTCP},
				Flags: wiretest.ACK, Seq: rng.Uint32(), Ack: rng.Uint32(), IPID: uint16(rng.Uint32())}
			frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4())
			want := mm.Process(frame)
			action, out := runXDP(t, b.ns, b.ifindex, m.Program(), frame)
			if action != string(want.Action) {
				t.Fatalf("generation %d: XDP %s, model %s/%s", table.Generation, action, want.Action, want.Counter)
			}
			if want.Action != model.Drop && !bytes.Equal(out[:len(want.Output)], want.Output) {
				t.Fatalf("generation %d: output differs\n got %x\nwant %x", table.Generation, out[:len(want.Output)], want.Output)
			}
			sent++
			if want.Action != model.Drop && want.Output[14]&0x0f > 9 {
				withHistory++
			}
		}
	}
	if withHistory < sent/10 {
		t.Fatalf("only %d of %d packets carried a history: the test does not exercise it", withHistory, sent)
	}
	t.Logf("%d packets, %d with previous owners in the option, same bytes as the model", sent, withHistory)
}

// TestAgentMatchesModel: random options (0–6 previous owners including this
// server, hops within and past the list, stale, current, new, forged and
// future (incarnation, generation) pairs, change times open, closed and far
// ahead) from the mux and from fellow servers, through the tc agent and the
// model agent in the same order, so their remembered state evolves alike.
// The inner packet is TCP, UDP (to a bound socket, or to one connected to
// its client) or an ICMP frag needed quoting a connection (issue 17).
// Issue 23: one packet in twelve has a bit of its outer header flipped
// after the checksum was computed, and previous owners include one outside
// the trusted prefixes; every packet goes through the XDP fast path first.
//
// It runs seed 8 and one seed drawn afresh each run (printed; replay with
// BEAMER_DIFF_SEED=N), so CI keeps exploring new combinations.
func TestAgentMatchesModel(t *testing.T) {
	seeds := []uint64{8, rand.Uint64()}
	if v := os.Getenv("BEAMER_DIFF_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		must(t, err)
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { agentMatchesModel(t, seed) })
	}
}

func agentMatchesModel(t *testing.T, seed uint64) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	s := v.Agent
	b := newAgentBench(t, &s)
	ma := &model.Agent{Addr: s.Addr, VIPs: map[netip.Addr]model.AgentVIP{}, Trusted: s.Trusted, Now: s.Now,
		MaxSkew: s.MaxSkew, MaxGenJump: s.MaxGenJump, Changed: map[[2]uint32]uint32{}, NextHops: modelNextHops(s.NextHops)}
	for i, vv := range s.VIPs {
		ma.VIPs[vv.VIP] = model.AgentVIP{Buckets: vv.Buckets, Window: vv.Window, Slot: uint32(i)}
	}
	ma.Socket = func(c, vp netip.AddrPort) model.Socket {
		found := model.NoSocket
		for _, sk := range s.Sockets {
			if sk.Local != vp {
				continue
			}
			if sk.Kind == "connection" && sk.Remote == c {
				return model.Connection
			}
			if sk.Kind == "listen" {
				found = model.Listener
			}
		}
		return found
	}
	ma.UDPSocket = func(c, vp netip.AddrPort) model.Socket {
		found := model.NoSocket
		for _, sk := range s.Sockets {
			if sk.Local != vp {
				continue
			}
			if sk.Kind == "udp-connected" && sk.Remote == c {
				return model.Connection
			}
			if sk.Kind == "udp" {
				found = model.Listener
			}
		}
		return found
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	now := s.Now
	pool := []netip.Addr{s.Addr, netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.12"),
		netip.MustParseAddr("198.18.0.14"), netip.MustParseAddr("198.19.250.1"),
		netip.MustParseAddr("198.19.200.200")} // the last outside the trusted prefixes (issue 23)
	sources := []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.12")}
	client := netip.MustParseAddr("198.18.200.7")
	serverMAC := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x11}
	inc1 := now - 86400
	counts := map[string]int{}
	for i := 0; i < 600; i++ {
		vip := s.VIPs[rng.IntN(len(s.VIPs))].VIP
		sport := uint16(46000 + rng.IntN(64))
		if rng.IntN(8) == 0 {
			sport = 41000 // the local connection
		}
		flags := wiretest.ACK
		if rng.IntN(12) == 0 {
			flags = wiretest.SYN
		}
		seg := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: sport, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: flags, Seq: rng.Uint32(), Ack: rng.Uint32(), Payload: []byte("x")}
		var opt *wire.Option
		if rng.IntN(10) != 0 {
			newest := ma.Newest(ma.VIPs[vip].Slot)
			inc, gen := uint32(newest>>32), uint32(newest)
			if inc == 0 {
				inc, gen = inc1, 5
			}
			switch rng.IntN(10) {
			case 0:
				gen-- // a mux behind
			case 1:
				gen++
			case 2:
				gen += s.MaxGenJump + 5 // forged jump
			case 3:
				inc, gen = max(inc, now-60)+uint32(rng.IntN(30)), 1 // a newer incarnation
			case 4:
				inc = now + 100000 // ahead of the clock
			case 5:
				inc-- // an older incarnation
			}
			o := wire.Option{Generation: gen, Incarnation: inc}
			for range rng.IntN(wire.MaxPrev + 1) {
				o.Prev = append(o.Prev, pool[rng.IntN(len(pool))])
			}
			o.Hop = uint8(rng.IntN(len(o.Prev) + 1))
			if rng.IntN(30) == 0 {
				o.Hop = uint8(len(o.Prev) + 1) // malformed
			}
			if len(o.Prev) > 0 {
				o.Changed = []uint32{now - 10, now - 500, now + 1_000_000, 0}[rng.IntN(4)]
			}
			opt = &o
		}
		inner := seg.IPv4()
		switch rng.IntN(6) { // issue 17: UDP (connected socket or not) and ICMP frag needed inside
		case 0, 1:
			f := seg.Flow
			f.DstPort = 53
			if rng.IntN(4) == 0 {
				f.SrcPort = 41005 // the connected UDP socket's client
			}
			inner = wiretest.Datagram{Flow: f, Payload: []byte("query")}.IPv4()
		case 2:
			reply := wiretest.Segment{Flow: wire.Flow{Src: vip, Dst: client, SrcPort: 80, DstPort: sport, Proto: wire.ProtoTCP}, Flags: wiretest.ACK}.IPv4()
			inner = wiretest.ICMPv4(netip.MustParseAddr("198.18.9.1"), vip, 3, 4, [4]byte{0, 0, 5, 0xdc}, reply[:28])
		}
		outer, err := wire.Encapsulate(inner, sources[rng.IntN(len(sources))], s.Addr, opt)
		must(t, err)
		if rng.IntN(12) == 0 {
			// Issue 23: a bit flipped in the outer header after its
			// checksum was computed (addresses, option, the checksum).
			hl := int(outer[0]&0x0f) * 4
			outer[10+rng.IntN(hl-10)] ^= 1 << rng.IntN(8)
		}
		frame := wiretest.Frame(wiretest.MuxMAC, serverMAC, outer)
		want := ma.Process(frame)
		before, err := b.agent.Counters()
		must(t, err)
		// Through the XDP fast path first, as on a server with native
		// XDP: what it decapsulates must be what the model keeps for
		// the stack without a state change; the rest goes on to tc.
		action, out := "", []byte(nil)
		xdpAction, xdpOut := runXDP(t, b.ns, b.ifindex, b.agent.XDPProgram(), frame)
		if xdpAction != "pass" {
			t.Fatalf("packet %d: XDP action %s", i, xdpAction)
		}
		if xdpDecap := !bytes.Equal(xdpOut, frame); xdpDecap {
			if fast := map[string]bool{"local_syn": true, "to_stack": true, "stack_no_option": true}; !fast[want.Counter] {
				t.Fatalf("packet %d: decapsulated in XDP, model %s/%s", i, want.Action, want.Counter)
			}
			action, out = "pass", xdpOut
			counts["xdp_decap"]++
		} else {
			action, out = runTC(t, b.ns, b.ifindex, b.agent.Program(), frame)
		}
		after, err := b.agent.Counters()
		must(t, err)
		if action != string(want.Action) || after[want.Counter]-before[want.Counter] != 1 {
			t.Fatalf("packet %d (%s): tc %s, model %s/%s; option %+v", i, hex.EncodeToString(outer[:min(len(outer), 60)]), action, want.Action, want.Counter, opt)
		}
		if want.Action != model.Drop && !bytes.Equal(out[:len(want.Output)], want.Output) {
			t.Fatalf("packet %d: output differs\n got %x\nwant %x", i, out[:len(want.Output)], want.Output)
		}
		counts[want.Counter]++
	}
	for _, c := range []string{"chained", "to_stack", "local_socket", "drop_stale_generation", "drop_bad_option", "local_syn", "stack_no_option",
		"drop_bad_checksum", "drop_untrusted_owner", "xdp_decap"} {
		if counts[c] == 0 {
			t.Errorf("no packet ended %s: the random input misses a path (%v)", c, counts)
		}
	}
	t.Logf("600 packets, same decisions and bytes as the model: %v", counts)
}
