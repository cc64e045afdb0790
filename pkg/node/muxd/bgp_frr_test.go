package muxd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// childBGPEnv, when set, makes the test binary a BGP speaker (childBGP)
// with the JSON BGPOptions it holds: run inside a namespace, its sessions
// start from that namespace's addresses, which a goroutine of the test
// process could not promise (GoBGP dials from threads of its own).
const childBGPEnv = "BEAMER_MUXD_TEST_BGP"

// childBGP announces, for each line read on stdin, exactly the VIPs the
// line lists (space separated), answering "ok" or the error; at the end
// of stdin it closes the speaker (withdrawing everything) and exits.
func childBGP(spec string) int {
	var o BGPOptions
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		fmt.Println(err)
		return 2
	}
	a, err := StartBGP(context.Background(), o)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer a.Close()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var vips []netip.Addr
		for _, f := range strings.Fields(in.Text()) {
			vips = append(vips, netip.MustParseAddr(f))
		}
		if err := a.Set(context.Background(), vips); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("ok")
	}
	return 0
}

// frrNet is a router namespace running FRR's bgpd (no zebra: it only has
// to learn routes) and a mux namespace, joined by a link carrying both
// families: mux 198.18.0.1 and 2001:db8::1, router .254 and ::fe.
type frrNet struct {
	dir       string // bgpd's files
	mux       *netlab.Namespace
	router    *netlab.Namespace
	muxIn     io.WriteCloser
	muxOut    *bufio.Scanner
	muxClosed chan struct{}
}

func startFRRNet(t *testing.T, frrConf string) *frrNet {
	const bgpd = "/usr/lib/frr/bgpd"
	netlabtest.RequireFile(t, bgpd, "the router's BGP speaker is FRR (apt-get install frr)")
	f := &frrNet{dir: t.TempDir()}
	f.mux, f.router = netlabtest.NewRig(t, "bgp6").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "router", netip.MustParsePrefix("198.18.0.254/24"), 0)
	must(t, f.mux.AddAddr("eth0", netip.MustParsePrefix("2001:db8::1/64")))
	must(t, f.router.AddAddr("eth0", netip.MustParsePrefix("2001:db8::fe/64")))

	u, err := user.Lookup("frr")
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	must(t, os.Chmod(filepath.Dir(f.dir), 0o711)) // bgpd drops root: let frr through
	must(t, os.Chown(f.dir, uid, gid))
	conf := filepath.Join(f.dir, "bgpd.conf")
	must(t, os.WriteFile(conf, []byte(frrConf), 0o644))
	cmd := f.router.Command(bgpd, "-Z", "-u", "frr", "-g", "frr", "-f", conf, "-i", filepath.Join(f.dir, "bgpd.pid"), "--vty_socket", f.dir)
	log, err := os.Create(filepath.Join(f.dir, "bgpd.log"))
	must(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("bgpd log:\n%s", b)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f.dir, "bgpd.vty")); err == nil {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatal("bgpd did not start within 10s")
		}
	}
}

// startMux runs the announcer in the mux namespace.
func (f *frrNet) startMux(t *testing.T, o BGPOptions) {
	spec, err := json.Marshal(o)
	must(t, err)
	cmd := f.mux.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childBGPEnv+"="+string(spec))
	if f.muxIn, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	f.muxOut = bufio.NewScanner(out)
	f.muxClosed = make(chan struct{})
	go func() { cmd.Wait(); close(f.muxClosed) }()
	t.Cleanup(func() { f.closeMux(t) })
}

// announce makes the mux announce exactly vips.
func (f *frrNet) announce(t *testing.T, vips ...string) {
	t.Helper()
	fmt.Fprintln(f.muxIn, strings.Join(vips, " "))
	if !f.muxOut.Scan() || f.muxOut.Text() != "ok" {
		t.Fatalf("announcing %v: %q", vips, f.muxOut.Text())
	}
}

// closeMux ends the announcer as a mux that stops does: withdraw, Cease.
func (f *frrNet) closeMux(t *testing.T) {
	if f.muxIn == nil {
		return
	}
	f.muxIn.Close()
	f.muxIn = nil
	select {
	case <-f.muxClosed:
	case <-time.After(10 * time.Second):
		t.Error("the BGP child did not exit within 10s of its stdin closing")
	}
}

// routes are the router's valid paths of one family ("ipv4" or "ipv6"):
// prefix → sorted next hops, one per path.
func (f *frrNet) routes(t *testing.T, family string) map[string][]string {
	out, err := exec.Command("vtysh", "--vty_socket", f.dir, "-c", "show bgp "+family+" unicast json").Output()
	must(t, err)
	var v struct {
		Routes map[string][]struct {
			Valid    bool `json:"valid"`
			Nexthops []struct {
				IP string `json:"ip"`
			} `json:"nexthops"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("vtysh: %v: %s", err, out)
	}
	got := map[string][]string{}
	for prefix, paths := range v.Routes {
		for _, p := range paths {
			if p.Valid && len(p.Nexthops) > 0 {
				got[prefix] = append(got[prefix], p.Nexthops[0].IP)
			}
		}
	}
	return got
}

// wait polls until the family's routes print as want, for at most 15 s.
func (f *frrNet) wait(t *testing.T, family, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = fmt.Sprint(f.routes(t, family)); got == want {
			return
		}
	}
	t.Fatalf("FRR's %s routes: %s, want %s", family, got, want)
}

// TestBGPIPv6WithFRR: the mux announces an IPv6 VIP as a /128 in the IPv6
// unicast family with its IPv6 address as next hop, beside an IPv4 VIP,
// over an IPv4 session and over an IPv6 one, and FRR learns both families
// on both; withdrawing the IPv6 VIP leaves the IPv4 route alone; a mux that
// closes withdraws everything.
func TestBGPIPv6WithFRR(t *testing.T) {
	f := startFRRNet(t, `hostname frr-test
router bgp 65000
 bgp router-id 198.18.0.254
 no bgp ebgp-requires-policy
 neighbor 198.18.0.1 remote-as 65001
 neighbor 198.18.0.1 timers 3 9
 neighbor 2001:db8::1 remote-as 65001
 neighbor 2001:db8::1 timers 3 9
 address-family ipv6 unicast
  neighbor 198.18.0.1 activate
  neighbor 2001:db8::1 activate
 exit-address-family
`)
	f.startMux(t, BGPOptions{ASN: 65001, NextHop: netip.MustParseAddr("198.18.0.1"), NextHop6: netip.MustParseAddr("2001:db8::1"),
		Peers:    []BGPPeer{{Addr: netip.MustParseAddr("198.18.0.254"), ASN: 65000}, {Addr: netip.MustParseAddr("2001:db8::fe"), ASN: 65000}},
		HoldTime: 3 * time.Second})
	both4, both6 := "map[198.18.100.1/32:[198.18.0.1 198.18.0.1]]", "map[2001:db8:100::1/128:[2001:db8::1 2001:db8::1]]"
	f.announce(t, "198.18.100.1", "2001:db8:100::1")
	f.wait(t, "ipv6", both6)
	f.wait(t, "ipv4", both4)
	f.announce(t, "198.18.100.1")
	f.wait(t, "ipv6", "map[]")
	f.wait(t, "ipv4", both4)
	f.announce(t, "198.18.100.1", "2001:db8:100::1")
	f.wait(t, "ipv6", both6)
	f.closeMux(t)
	f.wait(t, "ipv6", "map[]")
	f.wait(t, "ipv4", "map[]")
}
