package dataplane

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAgentSanityBounds (issue 11.7) plays a trusted but hostile (or
// broken) sender against the real agent program: a packet must not be able
// to move the remembered (incarnation, generation) or a bucket's change
// time arbitrarily far ahead, and every attempt is counted.
func TestAgentSanityBounds(t *testing.T) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	s := v.Agent
	b := newAgentBench(t, &s)
	now := s.Now
	vip := s.VIPs[0].VIP
	client := netip.MustParseAddr("198.18.200.7")
	mux := netip.MustParseAddr("198.18.0.1")
	prev := netip.MustParseAddr("198.18.0.10")
	serverMAC := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x11}
	const inc = 1_700_000_000
	port := uint16(45000)
	send := func(o wire.Option) (string, uint16) {
		port++
		seg := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: port, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Seq: 1, Ack: 1, Payload: []byte("x")}
		outer, err := wire.Encapsulate(seg.IPv4(), mux, s.Addr, &o)
		must(t, err)
		action, _ := runTC(t, b.ns, b.ifindex, b.agent.Program(), wiretest.Frame(wiretest.MuxMAC, serverMAC, outer))
		return action, port
	}
	counter := func(name string) uint64 {
		c, err := b.agent.Counters()
		must(t, err)
		return c[name]
	}
	expect := func(what, action, want string) {
		t.Helper()
		if action != want {
			t.Fatalf("%s: %s, want %s", what, action, want)
		}
	}
	legit := wire.Option{Incarnation: inc, Generation: 10}
	expect("legit stray at the newest generation", func() string { a, _ := send(legit); return a }(), "pass") // reset by the stack

	// A jump beyond the bound is refused and counted; the legit state stays the newest.
	before := counter("suspicious_generation")
	a, _ := send(wire.Option{Incarnation: inc, Generation: 10 + s.MaxGenJump + 1})
	expect("generation far ahead", a, "drop")
	if counter("suspicious_generation") != before+1 {
		t.Error("suspicious_generation not counted")
	}
	a, _ = send(legit)
	expect("legit after the refused jump", a, "pass")

	// An incarnation beyond clock + skew is refused and counted.
	before = counter("future_incarnation")
	a, _ = send(wire.Option{Incarnation: now + s.MaxSkew + 3600, Generation: 1})
	expect("incarnation ahead of the clock", a, "drop")
	if counter("future_incarnation") != before+1 {
		t.Error("future_incarnation not counted")
	}
	a, _ = send(legit)
	expect("legit after the refused incarnation", a, "pass")

	// A forged state within the bounds is accepted (it cannot be told from
	// a real controller that just took over) — but only for two memory
	// periods: after that the legit muxes are the newest again.
	before = counter("new_incarnation")
	a, _ = send(wire.Option{Incarnation: now, Generation: 0xffffffff})
	expect("forged incarnation within the skew", a, "pass")
	if counter("new_incarnation") != before+1 {
		t.Error("new_incarnation not counted")
	}
	a, _ = send(legit)
	expect("legit stray while the forged state is remembered", a, "drop")
	b.agent.Rotate()
	a, _ = send(legit)
	expect("one rotation later the forged state is still remembered", a, "drop")
	b.agent.Rotate()
	a, _ = send(legit)
	expect("two rotations later it is forgotten", a, "pass")
	if got := b.agent.NewestSeen(0); got != uint64(inc)<<32|10 {
		t.Errorf("newest remembered %#x, want the legit %#x", got, uint64(inc)<<32|10)
	}

	// A change time far in the future is clamped to clock + skew: the
	// bucket's window closes skew + window after now, not years later.
	before = counter("clamped_change")
	far := wire.Option{Incarnation: inc, Generation: 10, Changed: now + 10_000_000, Prev: []netip.Addr{prev}}
	a, p := send(far)
	expect("stray with a change time far ahead", a, "redirect")
	if counter("clamped_change") != before+1 {
		t.Error("clamped_change not counted")
	}
	// Another connection of the same bucket, once the clamped window is over.
	sameBucket := func() uint16 {
		bucket := wire.Flow{Src: client, Dst: vip, SrcPort: p, DstPort: 80, Proto: wire.ProtoTCP}.Bucket(s.VIPs[0].Buckets)
		for q := p + 1; ; q++ {
			if (wire.Flow{Src: client, Dst: vip, SrcPort: q, DstPort: 80, Proto: wire.ProtoTCP}).Bucket(s.VIPs[0].Buckets) == bucket {
				return q
			}
		}
	}()
	port = sameBucket - 1
	b.agent.SyncClock(time.Unix(int64(now+s.MaxSkew+s.VIPs[0].Window+5), 0))
	a, _ = send(wire.Option{Incarnation: inc, Generation: 10, Changed: now - 10, Prev: []netip.Addr{prev}})
	expect("same bucket after clock + skew + window", a, "pass") // not chained: reset at the newest
}
