package dataplane

import (
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// collidingVIPs returns n addresses of 198.18.0.0/15 other than v whose
// front line is v's.
func collidingVIPs(v netip.Addr, n int) []netip.Addr {
	var out []netip.Addr
	for a := netip.MustParseAddr("198.18.0.0"); len(out) < n && netip.MustParsePrefix("198.18.0.0/15").Contains(a); a = a.Next() {
		if a != v && vipLine(a) == vipLine(v) {
			out = append(out, a)
		}
	}
	return out
}

// TestVIPFrontLineFull: an operator (or a hostile configuration) naming
// more VIPs of one front line than it holds gets a clear error, and what
// was forwarding keeps forwarding; a full line still finds each of its
// VIPs.
func TestVIPFrontLineFull(t *testing.T) {
	vipFrontWays := muxLimit().vipFrontWays // VIP_FRONT_WAYS, from the program
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	syn := caseNamed(t, v, "syn to bucket owned by on-link server")
	vip := v.Mux.Instance.VIPs[0]
	others := collidingVIPs(vip, vipFrontWays)
	table, err := v.Mux.Table()
	must(t, err)

	cfg := v.Mux.Instance
	cfg.Services = nil // the vectors' services minus those naming their second VIP
	for _, s := range v.Mux.Instance.Services {
		if len(s.VIPs) == 0 {
			cfg.Services = append(cfg.Services, s)
		}
	}
	cfg.VIPs = append([]netip.Addr{vip}, others...) // 9 in a line of 8
	err = m.SetInstance(cfg, table)
	if err == nil || !strings.Contains(err.Error(), "front line") {
		t.Fatalf("9 VIPs in one front line: %v, want a front-line error", err)
	}
	if a, o := forwardedBy(t, b, m, syn); a != "tx" && a != "redirect" || o.Dst != netip.MustParseAddr("198.18.0.10") {
		t.Fatalf("after the refused reload the VIP's packet was %s to %v", a, o.Dst)
	}

	cfg.VIPs = cfg.VIPs[:vipFrontWays] // exactly full, the vectors' VIP first
	must(t, m.SetInstance(cfg, table))
	if a, o := forwardedBy(t, b, m, syn); a != "tx" && a != "redirect" || o.Dst != netip.MustParseAddr("198.18.0.10") {
		t.Fatalf("in a full line the VIP's packet was %s to %v", a, o.Dst)
	}
	// The line's other VIPs go; the vectors' VIP, in the middle of the
	// line now, is still found.
	cfg.VIPs = []netip.Addr{others[0], vip}
	must(t, m.SetInstance(cfg, table))
	cfg.VIPs = []netip.Addr{vip}
	must(t, m.SetInstance(cfg, table))
	if a, _ := forwardedBy(t, b, m, syn); a != "tx" && a != "redirect" {
		t.Fatalf("after the line emptied the VIP's packet was %s", a)
	}
	for w := range uint32(vipFrontWays) {
		x := m.vips.front.load(vipLine(vip)*uint32(vipFrontWays) + w)
		if x != 0 && x != frontWord(vip, m.vips.where[vip].record) {
			t.Fatalf("front word %d still names %#x after its VIP left", w, x)
		}
	}
}

// TestMuxVIPRecordsReused reloads the instance whole, over and over, while
// packets are forwarded, with a record pool so small that every reload
// reuses a record that a packet read a moment ago: each reload's table
// sends the bucket to another server by the parity of its generation, so a
// packet forwarded by a record half reused, or by the table of one reload
// with the generation of another, shows.
func TestMuxVIPRecordsReused(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	syn := caseNamed(t, v, "syn to bucket owned by on-link server")
	owner := [2]netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11")}
	base, err := v.Mux.Table()
	must(t, err)

	var waits atomic.Int64
	m.mu.Lock()
	m.vips.free = m.vips.free[len(m.vips.free)-2:] // two records besides the live one
	m.vips.grace = func() error { waits.Add(1); return graceWait() }
	m.mu.Unlock()

	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		deadline := time.Now().Add(3 * time.Second)
		for g := uint32(8); g < 200 && time.Now().Before(deadline); g++ {
			table := base.Clone()
			table.Generation = g
			table.Buckets[0] = forwarding.Bucket{Current: 1025 + forwarding.ServerID(g%2)}
			if err := m.SetInstance(v.Mux.Instance, table); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	packets := 0
	for ; packets < 500000 && !done.Load(); packets++ {
		a, o := forwardedBy(t, b, m, syn)
		if a != "tx" && a != "redirect" {
			t.Fatalf("packet %d: %s during reloads", packets, a)
		}
		if g := o.Option.Generation; g >= 8 && o.Dst != owner[g%2] {
			t.Fatalf("packet with generation %d went to %v: record and table of different reloads", g, o.Dst)
		}
	}
	wg.Wait()
	g, _ := m.Generation("web")
	t.Logf("%d packets during %d reloads, %d grace periods waited", packets, g-7, waits.Load())
	if g > 10 && waits.Load() == 0 {
		t.Fatal("records were reused without a grace period")
	}
}
