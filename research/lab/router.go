package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// frrDir is where Debian's frr package installs its daemons.
const frrDir = "/usr/lib/frr"

// routerSysctls make the router a router and give it a stable 5-tuple ECMP
// hash. Policy 3 hashes the fields listed in fib_multipath_hash_fields
// (source and destination address, protocol, source and destination port
// = 0x37) from the packet itself; policy 1 would reuse the sending
// socket's own hash, which Linux redraws after a retransmission timeout,
// moving the flow to another mux.
var routerSysctls = [][2]string{
	{"net.ipv4.ip_forward", "1"},
	{"net.ipv4.fib_multipath_hash_policy", "3"},
	{"net.ipv4.fib_multipath_hash_fields", "0x0037"},
}

// routerSysctls6 are the same for IPv6. The fields leave out the flow
// label (0x08), which a client's kernel may redraw for a flow (txrehash),
// as the IPv4 ones leave out nothing a flow changes.
var routerSysctls6 = [][2]string{
	{"net.ipv6.conf.all.forwarding", "1"},
	{"net.ipv6.fib_multipath_hash_policy", "3"},
	{"net.ipv6.fib_multipath_hash_fields", "0x0037"},
}

// startRouter runs FRR's zebra (kernel routes) and bgpd in the router
// namespace. bgpd accepts any mux of the fabric as a dynamic neighbour and
// installs up to 16 equal-cost paths to a VIP; zebra writes them to the
// kernel as one multipath route.
func (l *Lab) startRouter(ctx context.Context) error {
	for _, bin := range []string{"zebra", "bgpd"} {
		if _, err := os.Stat(filepath.Join(frrDir, bin)); err != nil {
			return fmt.Errorf("the lab's border router needs FRR (%s/%s missing): apt-get install frr, or run scripts/setup.sh", frrDir, bin)
		}
	}
	sysctls := routerSysctls
	if l.v6() {
		sysctls = append(sysctls[:len(sysctls):len(sysctls)], routerSysctls6...)
	}
	for _, kv := range sysctls {
		if err := l.router.Sysctl(kv[0], kv[1]); err != nil {
			return err
		}
	}
	// The hash seed sysctl exists from Linux 6.11: with it, which mux a
	// flow takes is reproducible from the run's seed.
	if _, err := os.Stat("/proc/sys/net/ipv4/fib_multipath_hash_seed"); err == nil {
		if err := l.router.Sysctl("net.ipv4.fib_multipath_hash_seed", strconv.FormatUint(uint64(uint32(l.opts.Seed))|1, 10)); err != nil {
			return err
		}
	}
	// Replies to the flood's spoofed sources die here, silently.
	if _, err := l.router.Run("ip", "route", "add", "blackhole", SpoofPrefix.String()); err != nil {
		return err
	}
	dir := filepath.Join(l.opts.Dir, "router")
	if err := frrOwnedDir(dir); err != nil {
		return err
	}
	zconf, bconf := filepath.Join(dir, "zebra.conf"), filepath.Join(dir, "bgpd.conf")
	if err := os.WriteFile(zconf, []byte("hostname lab-router\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(bconf, []byte(bgpdConfig(l.opts.BGPHold, l.v6())), 0o644); err != nil {
		return err
	}
	zsock := filepath.Join(dir, "zserv.api")
	common := []string{"-u", "frr", "-g", "frr", "--vty_socket", dir, "-z", zsock}
	zebra, err := startProgram(l.router, l.opts.Dir, "zebra", filepath.Join(frrDir, "zebra"),
		append(common, "-f", zconf, "-i", filepath.Join(dir, "zebra.pid"))...)
	if err != nil {
		return err
	}
	l.procs.add(zebra)
	if err := waitFor(10*time.Second, zebra, func() bool { _, err := os.Stat(zsock); return err == nil }); err != nil {
		return err
	}
	bgpd, err := startProgram(l.router, l.opts.Dir, "bgpd", filepath.Join(frrDir, "bgpd"),
		append(common, "-f", bconf, "-i", filepath.Join(dir, "bgpd.pid"))...)
	if err != nil {
		return err
	}
	l.procs.add(bgpd)
	return waitFor(10*time.Second, bgpd, func() bool {
		_, err := os.Stat(filepath.Join(dir, "bgpd.vty"))
		return err == nil && ctx.Err() == nil
	})
}

// bgpdConfig accepts every mux of the fabric (AS 65001) as a neighbour,
// with the lab's short timers, and spreads over up to 16 of them. With v6
// the same IPv4 sessions carry the IPv6 unicast family too (the muxes
// announce IPv6 VIPs with their IPv6 addresses as next hops).
func bgpdConfig(hold time.Duration, v6 bool) string {
	h := int(hold / time.Second)
	ipv6 := ""
	if v6 {
		ipv6 = ` address-family ipv6 unicast
  neighbor MUXES activate
  maximum-paths 16
 exit-address-family
`
	}
	return fmt.Sprintf(`hostname lab-router
log stdout informational
router bgp %d
 bgp router-id %s
 no bgp ebgp-requires-policy
 no bgp network import-check
 neighbor MUXES peer-group
 neighbor MUXES remote-as %d
 neighbor MUXES timers %d %d
 bgp listen range %s peer-group MUXES
 address-family ipv4 unicast
  neighbor MUXES activate
  maximum-paths 16
 exit-address-family
`, routerASN, routerFabric, muxASN, max(h/3, 1), h, fabricNet) + ipv6
}

// frrOwnedDir makes a directory the frr user can write (FRR drops root).
func frrOwnedDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	u, err := user.Lookup("frr")
	if err != nil {
		return fmt.Errorf("the frr user is missing (is FRR installed?): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The run directory is root's and private: let frr through to its own.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// VIPNextHops are the muxes the router's kernel route to the VIP spreads
// over, sorted.
func (l *Lab) VIPNextHops() ([]netip.Addr, error) {
	family, vip := "-4", l.vip()
	if l.v6() {
		family = "-6"
	}
	out, err := l.router.Run("ip", family, "route", "show", netip.PrefixFrom(vip, vip.BitLen()).String())
	if err != nil {
		return nil, err
	}
	var hops []netip.Addr
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "via" {
			if a, err := netip.ParseAddr(f[i+1]); err == nil {
				hops = append(hops, a)
			}
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops, nil
}

// waitNextHops waits until the router's route to the VIP goes through
// exactly the running muxes: BGP converged.
func (l *Lab) waitNextHops(ctx context.Context, want []netip.Addr, d time.Duration) error {
	slices.SortFunc(want, netip.Addr.Compare)
	deadline := time.Now().Add(d)
	for {
		got, err := l.VIPNextHops()
		if err == nil && slices.Equal(got, want) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("route to %v goes via %v, want %v", l.vip(), got, want)
			}
			return fmt.Errorf("BGP not converged after %v: %w", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bgpSummary is the router's view of its BGP sessions, for logs.
func (l *Lab) bgpSummary() string {
	dir := filepath.Join(l.opts.Dir, "router")
	cmd := exec.Command("vtysh", "--vty_socket", dir, "-c", "show bgp summary")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.Join(err, errors.New(string(out))).Error()
	}
	return string(out)
}
