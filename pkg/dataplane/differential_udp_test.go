package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// TestMuxMatchesModelUDPQUICICMP: hostile and ordinary packets of the
// issue-17 paths — UDP to random ports of both VIPs (the second one's
// ranges in an overflow set), QUIC headers with random and valid
// connection ids of every length, ICMP of random types quoting random
// packets, all with lengths cut at random — through the XDP mux and the
// model: the same action and the same bytes out, every time.
func TestMuxMatchesModelUDPQUICICMP(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	s := v.Mux
	table, err := s.Table()
	must(t, err)
	mm := &model.Mux{Addr: s.MuxAddr, NextHops: modelNextHops(s.NextHops), VIPs: map[netip.Addr]*model.VIP{}}
	for _, vip := range s.Instance.VIPs {
		mm.VIPs[vip] = &model.VIP{Instance: s.Instance, Table: table, Generation: s.Generation, Incarnation: s.Incarnation}
	}
	q := s.Instance.QUIC
	rng := rand.New(rand.NewPCG(17, 17))
	client := netip.MustParseAddr("198.18.200.7")
	ports := []uint16{53, 443, 80, 8443, 1026, 1100, 9000, 9100, 9350, 9401, 22, 0, 65535}
	port := func() uint16 {
		if rng.IntN(4) == 0 {
			return uint16(rng.Uint32())
		}
		return ports[rng.IntN(len(ports))]
	}
	ids := []forwarding.ServerID{1025, 1026, 1027, 1029, 1030, 1031, 1100, 0, 65535}
	quicPayload := func() []byte {
		cid := q.QUICConnID(ids[rng.IntN(len(ids))], []byte{byte(rng.Uint32()), 2, 3, 4, 5})
		switch rng.IntN(6) {
		case 0:
			cid[0] = byte(rng.Uint32()) // another config or length byte
		case 1:
			cid = cid[:rng.IntN(len(cid))] // another length
		}
		var p []byte
		if rng.IntN(2) == 0 {
			p = wiretest.QUICShort(cid)
		} else {
			p = wiretest.QUICLong(byte(rng.IntN(4)), cid)
			if rng.IntN(8) == 0 {
				copy(p[1:5], []byte{0, 0, 0, 0}) // version negotiation
			}
		}
		if rng.IntN(5) == 0 {
			rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		}
		return p[:rng.IntN(len(p)+1)]
	}
	sent, forwarded := 0, 0
	counts := map[string]int{}
	for range 600 {
		vip := s.Instance.VIPs[rng.IntN(len(s.Instance.VIPs))]
		var ip []byte
		switch rng.IntN(3) {
		case 0:
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(rng.Uint32()), DstPort: port()}
			if rng.IntN(2) == 0 {
				f.DstPort = 443
			}
			payload := make([]byte, rng.IntN(40))
			if f.DstPort == 443 || rng.IntN(3) == 0 {
				payload = quicPayload()
			}
			ip = wiretest.Datagram{Flow: f, Payload: payload, IPID: uint16(rng.Uint32())}.IPv4()
		case 1:
			// A reply from a VIP (or elsewhere) as a router quotes it.
			from := vip
			if rng.IntN(5) == 0 {
				from = client
			}
			sport := []uint16{80, 443, 53, port()}[rng.IntN(4)]
			reply := wiretest.Segment{Flow: wire.Flow{Src: from, Dst: client, SrcPort: sport, DstPort: uint16(rng.Uint32()), Proto: wire.ProtoTCP},
				Flags: wiretest.ACK}.IPv4()
			if rng.IntN(2) == 0 {
				reply = wiretest.Datagram{Flow: wire.Flow{Src: from, Dst: client, SrcPort: sport, DstPort: uint16(rng.Uint32())}}.IPv4()
			}
			if rng.IntN(6) == 0 {
				reply[0] = byte(rng.Uint32())
			}
			typ, code := uint8(3), uint8(4)
			if rng.IntN(3) == 0 {
				typ, code = uint8(rng.IntN(20)), uint8(rng.IntN(6))
			}
			body := reply[:min(len(reply), 20+rng.IntN(12))]
			ip = wiretest.ICMPv4(netip.MustParseAddr("198.18.9.1"), vip, typ, code, [4]byte{0, 0, 5, 0xdc}, body)
		default:
			ip = wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: uint16(rng.Uint32()), DstPort: port(), Proto: wire.ProtoTCP},
				Flags: []int{wiretest.SYN, wiretest.ACK}[rng.IntN(2)]}.IPv4()
		}
		if rng.IntN(8) == 0 { // a total length that lies
			binary.BigEndian.PutUint16(ip[2:], uint16(rng.IntN(len(ip)+20)))
		}
		if rng.IntN(10) == 0 && len(ip) > 28 { // a UDP length that lies
			binary.BigEndian.PutUint16(ip[24:], uint16(rng.Uint32()))
		}
		frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip)
		want := mm.Process(frame)
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		if action != string(want.Action) {
			t.Fatalf("packet %d %x: XDP %s, model %s/%s", sent, frame, action, want.Action, want.Counter)
		}
		if want.Action != model.Drop && !bytes.Equal(out[:len(want.Output)], want.Output) {
			t.Fatalf("packet %d %x: output differs\n got %x\nwant %x", sent, frame, out[:len(want.Output)], want.Output)
		}
		sent++
		counts[want.Counter]++
		if want.Action != model.Drop {
			forwarded++
		}
	}
	for _, c := range []string{"fwd_quic_cid", "fwd_bucket", "drop_closed_port", "drop_icmp", "drop_truncated"} {
		if counts[c] < 5 {
			t.Errorf("no packet took %s: the test does not exercise it (%v)", c, counts)
		}
	}
	t.Logf("%d packets, %d forwarded, same bytes as the model: %v", sent, forwarded, counts)
}
