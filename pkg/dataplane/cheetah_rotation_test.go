package dataplane

import (
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"golang.org/x/sys/unix"
)

// TestCheetahKeyRotationEndToEnd rotates the cookie key under real Linux
// TCP connections, in the order the controller does it
// (docs/strategy-cheetah.md, "Keys and rotation"): a new key in the spare
// slot reaches the mux (a generation) and the agents; then the agents make
// it current. Connections opened before keep key id 0 and keep reaching
// their server; new ones carry key id 1 (counted by the mux); forged echoes
// are still dropped. Overwriting key 0 (the next rotation) then makes the
// mux drop the echoes still made with it: the reason for ctl's --min-age.
func TestCheetahKeyRotationEndToEnd(t *testing.T) {
	opts := cheetahOptions(t, forwarding.CheetahRR)
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyCheetah, muxes: 1, table: threeServers,
		servers: []string{"a", "b", "c"}, cheetah: opts})
	type tracked struct {
		c      *echoConn
		server string
	}
	dial := func(n int, step string) []tracked {
		var out []tracked
		for i := range n {
			c := e.dial(t, false)
			s, err := c.ask(fmt.Sprintf("%s %d", step, i), answerWithin)
			if err != nil {
				t.Fatalf("%s: new connection %d: %v", step, i, err)
			}
			out = append(out, tracked{c, s})
		}
		return out
	}
	check := func(conns []tracked, step string) {
		t.Helper()
		for i, o := range conns {
			if s, err := o.c.ask(fmt.Sprintf("%s %d", step, i), answerWithin); err != nil || s != o.server {
				t.Fatalf("%s: connection %d (on %s) answered by %q: %v", step, i, o.server, s, err)
			}
		}
	}
	counters := func() map[string]uint64 {
		c, err := e.mux.CountersOf(forwarding.StrategyCheetah)
		must(t, err)
		return c
	}
	setKeys := func(ks cookie.Keys) {
		for name, a := range e.agents {
			must(t, cheetah.SetVIP(a, cheetah.AgentVIP{VIP: e2eVIP, ID: uint16(e2eID[name]), Keys: ks}))
		}
	}

	old := dial(6, "before")
	k2, err := cookie.NewKey()
	must(t, err)
	// Phase 1: the new key in slot 1, key id 0 still current.
	rotated := cookie.Keys{Current: 0, Keys: [2]cookie.Key{opts.Keys.Keys[0], k2}}
	e.publish(t, &forwarding.Delta{Cheetah: &forwarding.CheetahState{Keys: rotated}})
	setKeys(rotated)
	check(old, "after the new key")
	// Phase 2: key id 1 current on the mux and the agents.
	rotated.Current = 1
	e.publish(t, &forwarding.Delta{Cheetah: &forwarding.CheetahState{Keys: rotated}})
	setKeys(rotated)
	before := counters()
	check(old, "after the switch")
	mid := counters()
	if mid["cookie_key1"] != before["cookie_key1"] || mid["cookie_hit"] <= before["cookie_hit"] {
		t.Fatalf("old connections after the switch: %d echoes with key id 1, %d cookie hits: they must keep key id 0",
			mid["cookie_key1"]-before["cookie_key1"], mid["cookie_hit"]-before["cookie_hit"])
	}
	fresh := dial(6, "after")
	check(old, "beside new ones")
	after := counters()
	if got := after["cookie_key1"] - mid["cookie_key1"]; got < 6 {
		t.Fatalf("6 new connections sent %d echoes with key id 1, want every one of theirs", got)
	}
	if after["bad_cookie"] != 0 {
		t.Fatalf("%d bad cookies during the rotation", after["bad_cookie"])
	}
	servers := map[string]bool{}
	for _, f := range fresh {
		servers[f.server] = true
	}
	if len(servers) != 3 {
		t.Fatalf("new connections went to %v, want round robin over a, b, c", servers)
	}

	// Forged echoes (random TSecr, both key ids, spoofed 4-tuples) are
	// still dropped: 3 of 32768 slots hold a server.
	const forged = 2000
	rng := rand.New(rand.NewPCG(7, 7))
	pre := counters()
	must(t, e.client.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for i := range forged {
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(150 + i%50)}), uint16(20000+i))
			seg := wiretest.TSSegment(src, netip.AddrPortFrom(e2eVIP, 80), false, true, 1, rng.Uint32(), false)
			if err := unix.Sendto(fd, seg, 0, &unix.SockaddrInet4{Addr: e2eVIP.As4()}); err != nil {
				return err
			}
		}
		return nil
	}))
	// Every forged echo the mux sees is either dropped as a bad cookie or,
	// by chance (3 of 32768 ids: ~0.2 expected), forwarded as a hit; a late
	// delayed ACK of the 12 real connections is a hit too. Not every forged
	// echo need reach the mux: a burst from a raw socket can overflow the
	// veth ring on a busy machine, so what is checked is what the mux
	// decided: at most 20 hits (a mux forwarding 1 % of forgeries fails).
	var bad, hits uint64
	for deadline, last := time.Now().Add(answerWithin), uint64(0); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c := counters()
		bad, hits = c["bad_cookie"]-pre["bad_cookie"], c["cookie_hit"]-pre["cookie_hit"]
		if bad+hits >= forged || (bad+hits == last && bad > 0) {
			break
		}
		last = bad + hits
	}
	if bad < forged/2 || hits > 20 {
		t.Fatalf("of %d forged echoes the mux dropped %d as bad cookies and forwarded %d", forged, bad, hits)
	}
	// Signed: the hits may include a real connection's late ACK, so
	// bad+hits can exceed what was forged.
	t.Logf("forged echoes: %d dropped as bad cookies, %d forwarded (chance or a late real ACK), %d lost before the mux",
		bad, hits, max(0, int64(forged)-int64(bad+hits)))
	check(append(old, fresh...), "after the forgeries")

	// The next rotation overwrites slot 0: the new connections (key id 1)
	// live on; the echoes still made with the old key 0 are dropped as bad
	// cookies — which --min-age and the rotation's refusal while a switch
	// is recent prevent. (Such a connection may still recover if its
	// server retransmits with a cookie under the new key 0 and the
	// client's PAWS takes it: not something to rely on.)
	k3, err := cookie.NewKey()
	must(t, err)
	next := cookie.Keys{Current: 1, Keys: [2]cookie.Key{k3, k2}}
	e.publish(t, &forwarding.Delta{Cheetah: &forwarding.CheetahState{Keys: next}})
	setKeys(next)
	check(fresh, "after slot 0 was overwritten")
	bad = counters()["bad_cookie"]
	old[0].c.ask("after the overwrite", time.Second) // its fate is not the point
	if got := counters()["bad_cookie"]; got == bad {
		t.Fatal("an echo made with the overwritten key 0 was not dropped: the connection did not depend on its key")
	}
}

// Power of two choices over the loads the controller publishes in the
// ring: SYNs go to the less loaded of two random active servers, so the
// shares follow the published loads, and a new generation's loads move
// them at once.
func TestCheetahMuxP2CLoads(t *testing.T) {
	k, err := cookie.NewKey()
	must(t, err)
	r := newCheetahMuxRig(t, cookie.Keys{Keys: [2]cookie.Key{k, k}}, forwarding.CheetahP2C)
	client := netip.MustParseAddr("198.18.1.78")
	port := uint16(10000)
	shares := func(loads map[forwarding.ServerID]uint32) map[forwarding.ServerID]float64 {
		inst := r.m.instances["cz"]
		d := &forwarding.Delta{Generation: inst.table.Generation + 1, Cheetah: &forwarding.CheetahState{Keys: cookie.Keys{Keys: [2]cookie.Key{k, k}}, Loads: loads}}
		must(t, r.m.ApplyDelta("cz", d))
		const n = 1800
		got := map[forwarding.ServerID]float64{}
		for range n {
			port++
			dst := r.send(tsSegment(netip.AddrPortFrom(client, port), netip.AddrPortFrom(r.vip, 80), true, false, 1, 0, true))
			for id, a := range r.addr {
				if a == dst {
					got[id] += 1.0 / n
				}
			}
		}
		return got
	}
	// Three active servers (32767 is retired); loads 0, 50, 100: the idle
	// one wins unless neither choice is it (5/9), the middle one then
	// unless both are the busiest (3/9), the busiest 1/9.
	want := map[forwarding.ServerID]float64{1025: 5.0 / 9, 1031: 3.0 / 9, 2000: 1.0 / 9}
	checkShares := func(got, want map[forwarding.ServerID]float64, step string) {
		t.Helper()
		for id, w := range want {
			if d := got[id] - w; d > 0.05 || d < -0.05 {
				t.Fatalf("%s: shares %v, want %v ± 0.05", step, got, want)
			}
		}
		if got[32767] != 0 {
			t.Fatalf("%s: the retired server got SYNs", step)
		}
	}
	checkShares(shares(map[forwarding.ServerID]uint32{1031: 50, 2000: 100}), want, "loads 0/50/100")
	// The loads turn around in the next generation.
	want = map[forwarding.ServerID]float64{2000: 5.0 / 9, 1031: 3.0 / 9, 1025: 1.0 / 9}
	checkShares(shares(map[forwarding.ServerID]uint32{1025: 100, 1031: 50}), want, "loads 100/50/0")
}
