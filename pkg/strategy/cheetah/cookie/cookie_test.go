package cookie

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/cheetah-vectors.json from the model (review the diff)")

var vecKeys = [2]Key{{0x01234567, 0x89abcdef, 0xfedcba98, 0x76543210}, {0xdeadbeef, 0x0badf00d, 0x12345678, 0x9e3779b9}}

// generate computes the vectors from the model: the file's numbers are the
// model's, and the C programs must reproduce them.
func generate() *Vectors {
	c := netip.MustParseAddr("198.18.1.10")
	vip := netip.MustParseAddr("198.18.100.1")
	cases := []CookieVector{
		{Name: "data, kid 0", KID: 0, ID: 1025, CPort: 40000, VPort: 80, TSval: 0x12345678},
		{Name: "data, kid 1", KID: 1, ID: 1025, CPort: 40000, VPort: 80, TSval: 0x12345678},
		{Name: "other port, same server", KID: 0, ID: 1025, CPort: 40001, VPort: 80, TSval: 0x12345678},
		{Name: "largest id", KID: 0, ID: MaxID, CPort: 51234, VPort: 443, TSval: 0x00000001},
		{Name: "syn-ack keeps syn-cookie bits", KID: 0, ID: 1031, CPort: 40000, VPort: 80, TSval: 0xa1b2c3e5, SynAck: true},
		{Name: "syn-ack, low bits 63", KID: 1, ID: 1031, CPort: 40000, VPort: 80, TSval: 0x0000003f, SynAck: true},
		{Name: "clock about to wrap", KID: 0, ID: 2000, CPort: 33333, VPort: 80, TSval: 0xffffffff},
		{Name: "clock just wrapped", KID: 0, ID: 2000, CPort: 33333, VPort: 80, TSval: 0x00000000},
		{Name: "tick boundary below", KID: 0, ID: 2000, CPort: 33333, VPort: 80, TSval: 0x007fffff},
		{Name: "tick boundary above", KID: 0, ID: 2000, CPort: 33333, VPort: 80, TSval: 0x00800000},
	}
	v := &Vectors{}
	for _, cv := range cases {
		cv.Keys, cv.Client, cv.VIP = vecKeys, c, vip
		ks := Keys{Keys: vecKeys}
		cv.Mask = Mask(ks.Keys[cv.KID], cv.Flow())
		cv.Cookie = ks.Encode(cv.ID, cv.KID, cv.Flow())
		cv.Out = TSval(cv.TSval, cv.Cookie, cv.SynAck)
		v.Cookies = append(v.Cookies, cv)
	}
	for _, r := range []RestoreVector{
		{Name: "data echo", Echo: 0x1234567f},
		{Name: "data echo to a listener", Echo: 0x1234567f, Listener: true},
		{Name: "syn-ack echo to a listener (syn cookie)", Echo: 0xa1b2c325, Listener: true},
		{Name: "syn-ack echo, low bits 0, to a listener", Echo: 0xa1b2c300, Listener: true},
		{Name: "syn-ack echo to a request socket", Echo: 0xa1b2c325},
		{Name: "no echo", Echo: 0, Listener: true},
	} {
		r.Restored = Restore(r.Echo, r.Listener)
		v.Restores = append(v.Restores, r)
	}
	return v
}

func TestVectorsMatchModel(t *testing.T) {
	want := generate()
	if *update {
		b, _ := json.MarshalIndent(want, "", "  ")
		if err := os.WriteFile(VectorsPath(), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadVectors()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Fatalf("testdata/cheetah-vectors.json differs from the model:\n file %s\nmodel %s", a, b)
	}
	for _, v := range got.Cookies {
		ks := Keys{Keys: v.Keys}
		if id, kid := ks.Decode(v.Out, v.Flow()); id != v.ID || kid != v.KID {
			t.Errorf("%s: decode gives id %d kid %d, want %d %d", v.Name, id, kid, v.ID, v.KID)
		}
	}
}

// A server's timestamps, as the client sees them, never go back: Linux's
// PAWS check (window 1, modulo 2^32) accepts every segment after the SYN-ACK,
// across the 2.3-hour ticks and across the 2^32 wrap.
func TestTimestampWrapAndPAWS(t *testing.T) {
	f := wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: netip.MustParseAddr("198.18.100.1"), SrcPort: 40000, DstPort: 80, Proto: 6}
	ks := Keys{Keys: vecKeys}
	cookie := ks.Encode(1042, 0, f)
	for _, start := range []uint32{0, 0x007fffc0, 0xff7fff00, 0xffffff00, 0x7fffffff} {
		last := TSval(start, cookie, true)
		// One segment every 997 ms for 50 hours: crosses ticks, and the wrap
		// for the starts near 2^32.
		for ms := uint32(1); ms < 50*3600*1000; ms += 997 {
			next := TSval(start+ms, cookie, false)
			if !PAWSAccepts(last, next) {
				t.Fatalf("start %#x +%d ms: PAWS refuses %#x after %#x", start, ms, next, last)
			}
			if id, _ := ks.Decode(next, f); id != 1042 {
				t.Fatalf("start %#x +%d ms: cookie names %d", start, ms, id)
			}
			last = next
		}
	}
	// An idle connection: 24 days between two segments is the most PAWS
	// takes (2^31 ms); 20 days pass.
	last := TSval(0x40000000, cookie, false)
	if next := TSval(0x40000000+20*24*3600*1000, cookie, false); !PAWSAccepts(last, next) {
		t.Fatalf("20 idle days: PAWS refuses %#x after %#x", next, last)
	}
}

// A client cannot aim at a server: for a fixed target, the cookie that names
// it differs per 4-tuple and key, and without the key the best a client can do
// is guess — every one of the 2^15 values names some slot, so a guess lands on
// the target with probability 2^-15 (the mux drops and counts cookies naming
// empty slots). Here: over 20,000 connections, each forged cookie copied from
// one connection to the next names the target no more often than chance.
func TestForgedCookies(t *testing.T) {
	ks := Keys{Keys: vecKeys}
	const target = 1025
	hits := 0
	f := wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: netip.MustParseAddr("198.18.100.1"), DstPort: 80, Proto: 6}
	prev := uint16(0)
	for p := 0; p < 20000; p++ {
		f.SrcPort = uint16(10000 + p)
		own := ks.Encode(target, 0, f)
		if p > 0 {
			// Replay the cookie learnt on the previous port.
			if id, _ := ks.Decode(uint32(prev)<<CookieShift, f); id == target {
				hits++
			}
		}
		prev = own
	}
	if hits > 5 { // expectation 20000/32768 ≈ 0.6
		t.Fatalf("a replayed cookie reached the target %d times in 20000", hits)
	}
	// Another key: the same cookie names another server.
	other := Keys{Keys: [2]Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	c := ks.Encode(target, 0, f)
	if id, _ := other.Decode(uint32(c)<<CookieShift, f); id == target {
		t.Fatalf("cookie decodes to the target under an unrelated key")
	}
}

func TestKeyText(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.MarshalText()
	var k2 Key
	if err := k2.UnmarshalText(b); err != nil || k2 != k {
		t.Fatalf("round trip %v → %s → %v (%v)", k, b, k2, err)
	}
	if _, err := ParseKey("xyz"); err == nil {
		t.Fatal("bad key accepted")
	}
}

// The layout this package rejects: cookie in the high 16 bits, the clock's
// low 16 bits below it. The client's PAWS refuses the segment after the low
// bits wrap (65.5 s), which would stall every connection.
func TestHighBitsCookieBreaksPAWS(t *testing.T) {
	high := func(ts uint32) uint32 { return 0xabcd<<16 | ts&0xffff }
	last := high(0x0001fff0)
	for ms := uint32(1); ms < 100; ms++ {
		next := high(0x0001fff0 + ms)
		if !PAWSAccepts(last, next) {
			return // the wrap: refused, as the doc says
		}
		last = next
	}
	t.Fatal("the high-bits layout passed PAWS across the wrap of its clock bits")
}
