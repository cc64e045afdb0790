package beamercli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/nodestate"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// runOut runs a command line, returning what it printed.
func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	err := run(args...)
	return out.String(), err
}

// TestMuxInspectCommand: `beamer mux inspect --pin-dir DIR` on a pinned
// mux prints its table (-o json parsed here, and the table for people);
// on a directory with nothing pinned it says so and fails.
func TestMuxInspectCommand(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "inspcmd").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	// The mux's default pin directory in its namespace, so --iface finds it.
	var dir string
	if err := ns.Do(func() error {
		name, err := nodestate.Name("mux", "eth0")
		dir = filepath.Join(dataplane.BPFFSRoot, "beamer", name)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m, err := dataplane.LoadMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), PinDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	vip := netip.MustParseAddr("198.18.100.1")
	table := forwarding.NewTable(10)
	table.Incarnation, table.Generation = 1700000000, 3
	table.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	table.Servers[1026] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.11"), State: forwarding.Active}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: 1025 + forwarding.ServerID(i%2)}
	}
	table.Buckets[9] = forwarding.Bucket{} // unowned
	if err := m.SetInstance(forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 10, ChainWindow: forwarding.DefaultChainWindow, Encap: forwarding.EncapGUE}, table); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		l, err := m.Attach("eth0", dataplane.XDPGeneric)
		if err == nil {
			l.Close() // the pin keeps it attached
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dataplane.Unpin(dir, nil) })
	// A next hop as the daemon publishes it (nexthop_table.go).
	if err := m.PublishNextHop(netip.MustParseAddr("198.18.0.10"), dataplane.ResolvedNextHop{Ifindex: 2, MTU: 1600,
		Dst: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0x10}, Src: net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}

	out, err := runOut(t, "mux", "inspect", "--pin-dir", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tables []struct {
			VIPs []struct {
				VIP         string `json:"vip"`
				Incarnation uint32 `json:"incarnation"`
				Generation  uint32 `json:"generation"`
			} `json:"vips"`
			Strategy string `json:"strategy"`
			Encap    string `json:"encap"`
			GUEPort  uint16 `json:"gue_port"`
			Servers  []struct {
				ID      uint16 `json:"id"`
				Addr    string `json:"address"`
				Buckets int    `json:"buckets"`
			} `json:"servers"`
			Unowned int `json:"unowned_buckets"`
		} `json:"tables"`
		Counters  map[string]uint64 `json:"counters"`
		Published []struct {
			Addr    string `json:"address"`
			Ifindex uint32 `json:"ifindex"`
			MAC     string `json:"mac"`
			MTU     uint32 `json:"mtu"`
		} `json:"published_next_hops"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if p := doc.Published; len(p) != 1 || p[0].Addr != "198.18.0.10" || p[0].Ifindex != 2 || p[0].MAC != "02:be:a0:00:01:10" || p[0].MTU != 1600 {
		t.Errorf("published next hops %+v", p)
	}
	if len(doc.Tables) != 1 || len(doc.Tables[0].VIPs) != 1 {
		t.Fatalf("tables: %s", out)
	}
	tb := doc.Tables[0]
	if v := tb.VIPs[0]; v.VIP != vip.String() || v.Incarnation != 1700000000 || v.Generation != 3 {
		t.Errorf("VIP %+v", v)
	}
	if tb.Strategy != "beamer" || tb.Encap != "gue" || tb.GUEPort != forwarding.DefaultGUEPort || tb.Unowned != 1 {
		t.Errorf("table %+v", tb)
	}
	if len(tb.Servers) != 2 || tb.Servers[0].ID != 1025 || tb.Servers[0].Buckets != 5 || tb.Servers[0].Addr != "198.18.0.10" ||
		tb.Servers[1].ID != 1026 || tb.Servers[1].Buckets != 4 {
		t.Errorf("servers %+v", tb.Servers)
	}
	if _, ok := doc.Counters["fwd_bucket"]; !ok {
		t.Errorf("counters %v", doc.Counters)
	}

	// The table, from the directory --iface names in the mux's namespace.
	if err := ns.Do(func() (err error) { out, err = runOut(t, "mux", "inspect", "--iface", "eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Logf("beamer mux inspect --iface eth0 (pins %s)\n%s", dir, out)
	for _, want := range []string{"vip 198.18.100.1  incarnation 1700000000  generation 3", "1025  198.18.0.10  active  5", "unowned buckets: 1",
		"next hops (published by the daemon):", "198.18.0.10  2        02:be:a0:00:01:10  1600"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}

	missing := filepath.Join(dir, "nothing-here")
	_, err = runOut(t, "mux", "inspect", "--pin-dir", missing)
	if err == nil || !strings.Contains(err.Error(), "nothing pinned at "+missing+": no such directory") {
		t.Errorf("missing pin dir: %v", err)
	}
	_, err = runOut(t, "agent", "inspect", "--pin-dir", dir, "-o", "json")
	if err == nil || !strings.Contains(err.Error(), `is "beamer_mux", not "beamer_agent"`) {
		t.Errorf("agent inspect of a mux's pins: %v", err)
	}
	t.Logf("agent inspect of a mux's pins: %v", err)
}

// TestAgentInspectCommand: `beamer agent inspect` on a pinned agent
// serving a Cheetah VIP shows the VIP and the Cheetah slot with each key's
// id and fingerprint — and never the key itself, in either format.
func TestAgentInspectCommand(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "inspagent").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 1600)
	dir := netlabtest.PinDir(t, "inspagent")
	vip := netip.MustParseAddr("198.18.100.1")
	a, err := dataplane.LoadAgent(dataplane.AgentOptions{Addr: netip.MustParseAddr("198.18.0.10"), Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []dataplane.AgentVIP{{VIP: vip, Buckets: 67, ChainWindow: 2 * time.Minute}}, PinDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	var keys cookie.Keys
	for i := range keys.Keys {
		if keys.Keys[i], err = cookie.NewKey(); err != nil {
			t.Fatal(err)
		}
	}
	keys.Current = 1
	if err := cheetah.SetVIP(a, cheetah.AgentVIP{VIP: vip, ID: 3, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		l, err := a.Attach("eth0")
		if err == nil {
			l.Close() // the pin keeps it attached
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dataplane.Unpin(dir, nil) })

	out, err := runOut(t, "agent", "inspect", "--pin-dir", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct { // the agent's fields and Cheetah's beside them
		dataplane.AgentInspection
		Cheetah []cheetah.VIPInspect `json:"cheetah"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(doc.VIPs) != 1 || doc.VIPs[0].VIP != vip || doc.VIPs[0].Buckets != 67 || doc.VIPs[0].Window != "2m0s" || doc.VIPs[0].Generation != 0 {
		t.Errorf("VIPs %+v", doc.VIPs)
	}
	want := keys.View()
	if len(doc.Cheetah) != 1 || doc.Cheetah[0].VIP != vip || doc.Cheetah[0].ID != 3 || len(doc.Cheetah[0].Keys) != 2 ||
		doc.Cheetah[0].Keys[0] != want[0] || doc.Cheetah[0].Keys[1] != want[1] || !want[1].Current {
		t.Errorf("cheetah %+v, want slot 3 with keys %+v", doc.Cheetah, want)
	}
	if _, ok := doc.Counters["local_syn"]; !ok {
		t.Errorf("counters %v", doc.Counters)
	}
	table, err := runOut(t, "agent", "inspect", "--pin-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("beamer agent inspect --pin-dir %s\n%s", dir, table)
	if !strings.Contains(table, "slot 3  keys 0 "+want[0].Fingerprint+", 1 "+want[1].Fingerprint+" (current)") {
		t.Errorf("table lacks the Cheetah line:\n%s", table)
	}
	for _, k := range keys.Keys {
		for _, o := range []string{out, table} {
			if strings.Contains(o, k.String()) || strings.Contains(o, fmt.Sprintf("%08x", k[0])) {
				t.Errorf("key bytes in the output:\n%s", o)
			}
		}
	}
}

// TestMuxInspectIPv6: an IPv6 instance (GUE) is shown with its VIP and its
// servers' whole IPv6 addresses, beside an IPv4 instance on the same mux.
func TestMuxInspectIPv6(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "inspmux6").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	dir := netlabtest.PinDir(t, "inspmux6")
	m, err := dataplane.LoadMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Addr6: netip.MustParseAddr("2001:db8::1"), PinDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	set := func(name, vip string, servers map[forwarding.ServerID]string, encap forwarding.Encap) {
		t.Helper()
		table := forwarding.NewTable(8)
		table.Incarnation, table.Generation = 1700000000, 2
		var ids []forwarding.ServerID
		for id, a := range servers {
			table.Servers[id] = forwarding.Server{Addr: netip.MustParseAddr(a), State: forwarding.Active}
			ids = append(ids, id)
		}
		for i := range table.Buckets {
			table.Buckets[i] = forwarding.Bucket{Current: ids[0]} // one server each
		}
		if err := m.SetInstance(forwarding.Instance{Name: name, Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr(vip)},
			PortLow: 443, PortHigh: 443, Buckets: 8, ChainWindow: forwarding.DefaultChainWindow, Encap: encap}, table); err != nil {
			t.Fatal(err)
		}
	}
	set("web", "198.18.100.1", map[forwarding.ServerID]string{1025: "198.18.0.10"}, "")
	set("web6", "2001:db8:100::1", map[forwarding.ServerID]string{1030: "2001:db8::10"}, forwarding.EncapGUE)
	if err := ns.Do(func() error {
		l, err := m.Attach("eth0", dataplane.XDPGeneric)
		if err == nil {
			l.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dataplane.Unpin(dir, nil) })
	in, err := dataplane.InspectMux(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tb := range in.Tables {
		if len(tb.VIPs) != 1 || len(tb.Servers) != 1 || tb.Servers[0].Buckets != 8 {
			t.Fatalf("table %+v", tb)
		}
		got[tb.VIPs[0].VIP.String()] = fmt.Sprintf("%s %d %s", tb.Encap, tb.Servers[0].ID, tb.Servers[0].Addr)
	}
	want := map[string]string{"198.18.100.1": "ipip 1025 198.18.0.10", "2001:db8:100::1": "gue 1030 2001:db8::10"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tables %v, want %v", got, want)
	}
}
