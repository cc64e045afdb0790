package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Lab owns a set of namespaces.
type Lab struct {
	mu     sync.Mutex
	prefix string
	spaces []*Namespace
	seq    int
}

// Namespace is one named network namespace.
type Namespace struct {
	Name   string
	handle netns.NsHandle
	nl     *netlink.Handle
}

// New starts a lab whose namespaces are named bmr<pid>t<start>x<tag>-<name>
// (start: the process's start time, see owner). It first removes namespaces
// left by earlier runs whose process no longer exists.
func New(tag string) (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("netlab: network namespaces need root")
	}
	self, err := selfOwner()
	if err != nil {
		return nil, err
	}
	return newOwnedBy(self, tag), nil
}

// newOwnedBy is New with the owner given (tests make namespaces in the
// name of other processes).
func newOwnedBy(o owner, tag string) *Lab {
	SweepStale()
	return &Lab{prefix: o.prefix() + tag}
}

// Namespace creates a new namespace with loopback up.
func (l *Lab) Namespace(name string) (*Namespace, error) {
	l.mu.Lock()
	l.seq++
	full := fmt.Sprintf("%s-%s", l.prefix, name)
	l.mu.Unlock()
	if len(full) > 60 {
		return nil, fmt.Errorf("netlab: namespace name %q too long", full)
	}
	h, err := createNamed(full)
	if err != nil {
		return nil, fmt.Errorf("netlab: creating namespace %s: %w", full, err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		deleteNamed(full)
		return nil, err
	}
	ns := &Namespace{Name: full, handle: h, nl: nl}
	l.mu.Lock()
	l.spaces = append(l.spaces, ns)
	l.mu.Unlock()
	lo, err := nl.LinkByName("lo")
	if err == nil {
		err = nl.LinkSetUp(lo)
	}
	if err != nil {
		return nil, fmt.Errorf("netlab: loopback up in %s: %w", full, err)
	}
	return ns, nil
}

// Close removes every namespace of the lab (and with them their links).
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, ns := range l.spaces {
		ns.nl.Close()
		ns.handle.Close()
		if err := deleteNamed(ns.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", ns.Name, err))
		}
	}
	l.spaces = nil
	return errors.Join(errs...)
}

// Do runs fn with the calling goroutine's thread inside the namespace.
// Sockets fn opens stay in the namespace after it returns.
func (ns *Namespace) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns.handle); err != nil {
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		panic(fmt.Sprintf("netlab: cannot return to original namespace: %v", err))
	}
	return ferr
}

// DoOnCPU is Do with the thread also pinned to one CPU, so that successive
// calls see the same per-CPU state of BPF programs (tables, caches).
func (ns *Namespace) DoOnCPU(cpu int, fn func() error) error {
	return ns.Do(func() error {
		var old, one unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			return err
		}
		defer unix.SchedSetaffinity(0, &old)
		return fn()
	})
}

// Command returns a command that runs inside the namespace.
func (ns *Namespace) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Run runs a command inside the namespace and returns its combined output.
func (ns *Namespace) Run(name string, args ...string) (string, error) {
	out, err := ns.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), ns.Name, err, out)
	}
	return string(out), nil
}

// Sysctl sets a sysctl inside the namespace (key in dotted form).
func (ns *Namespace) Sysctl(key, value string) error {
	return ns.Do(func() error {
		return os.WriteFile("/proc/sys/"+strings.ReplaceAll(key, ".", "/"), []byte(value), 0o644)
	})
}

// Netlink is the namespace's netlink handle.
func (ns *Namespace) Netlink() *netlink.Handle { return ns.nl }

// Handle is the namespace's handle (owned by the namespace: not to be closed).
func (ns *Namespace) Handle() netns.NsHandle { return ns.handle }

// Veth joins two namespaces with a veth pair, gives each end an address
// (prefix length included) and brings both up. mtu 0 keeps the default.
func (l *Lab) Veth(a *Namespace, aName string, aAddr netip.Prefix, b *Namespace, bName string, bAddr netip.Prefix, mtu int) error {
	l.mu.Lock()
	l.seq++
	tmpA, tmpB := fmt.Sprintf("bmrv%da", l.seq), fmt.Sprintf("bmrv%db", l.seq)
	l.mu.Unlock()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = tmpA
	attrs.MTU = mtu
	attrs.Namespace = netlink.NsFd(a.handle)
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: tmpB, PeerNamespace: netlink.NsFd(b.handle)}
	if mtu > 0 {
		veth.PeerMTU = uint32(mtu)
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: veth %s/%s: %w", aName, bName, err)
	}
	if err := a.setupLink(tmpA, aName, aAddr); err != nil {
		return err
	}
	if err := b.setupLink(tmpB, bName, bAddr); err != nil {
		return err
	}
	// An IPv6 address on a link that was down is added once the link has
	// a carrier, that is after both ends are up (see AddAddr).
	for _, end := range []struct {
		ns   *Namespace
		addr netip.Prefix
	}{{a, aAddr}, {b, bAddr}} {
		if end.addr.IsValid() && end.addr.Addr().Is6() {
			if err := end.ns.waitLocalRoute(end.addr.Addr(), 5*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ns *Namespace) setupLink(tmp, name string, addr netip.Prefix) error {
	link, err := ns.nl.LinkByName(tmp)
	if err != nil {
		return fmt.Errorf("netlab: %s in %s: %w", tmp, ns.Name, err)
	}
	if err := ns.nl.LinkSetName(link, name); err != nil {
		return fmt.Errorf("netlab: renaming %s to %s: %w", tmp, name, err)
	}
	if addr.IsValid() {
		if err := ns.AddAddr(name, addr); err != nil {
			return err
		}
	}
	return ns.nl.LinkSetUp(link)
}

// Ranges are the only addresses a lab may use: 198.18.0.0/15 (RFC 2544)
// and 2001:db8::/32 (RFC 3849, documentation), so that nothing a test
// sends can be mistaken for real traffic.
var Ranges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("2001:db8::/32")}

// AddAddr adds an address with its prefix length to a device. An IPv6
// address skips duplicate address detection: on a lab's own links there
// is nothing to detect, and a tentative address would refuse binds and
// leave routes unusable for the first seconds. Even without detection the
// kernel installs an IPv6 address's local route from a work queue, a
// moment after the add returns (on a busy machine, long enough for a
// connect to fail with "network is unreachable"), so AddAddr waits for it.
func (ns *Namespace) AddAddr(dev string, addr netip.Prefix) error {
	if !slices.ContainsFunc(Ranges, func(r netip.Prefix) bool { return r.Contains(addr.Addr()) }) {
		return fmt.Errorf("netlab: address %v is outside the lab ranges %v", addr, Ranges)
	}
	link, err := ns.nl.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netlab: %s in %s: %w", dev, ns.Name, err)
	}
	a, err := netlink.ParseAddr(addr.String())
	if err != nil {
		return err
	}
	if addr.Addr().Is6() {
		a.Flags |= unix.IFA_F_NODAD
	}
	if err := ns.nl.AddrAdd(link, a); err != nil {
		return fmt.Errorf("netlab: address %v on %s in %s: %w", addr, dev, ns.Name, err)
	}
	if addr.Addr().Is6() && link.Attrs().Flags&net.FlagUp != 0 {
		return ns.waitLocalRoute(addr.Addr(), 5*time.Second)
	}
	return nil
}

// waitLocalRoute waits until the local table routes addr to this host,
// which is when the kernel has finished adding the address.
func (ns *Namespace) waitLocalRoute(addr netip.Addr, within time.Duration) error {
	filter := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(addr.BitLen(), addr.BitLen())}}
	deadline := time.Now().Add(within)
	for {
		routes, err := ns.nl.RouteListFiltered(netlink.FAMILY_V6, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
		if err != nil {
			return fmt.Errorf("netlab: local route of %v in %s: %w", addr, ns.Name, err)
		}
		if len(routes) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netlab: address %v in %s: the kernel installed no local route in %v", addr, ns.Name, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// LinkIndex is the ifindex of a device in the namespace.
func (ns *Namespace) LinkIndex(dev string) (int, error) {
	link, err := ns.nl.LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("netlab: %s in %s: %w", dev, ns.Name, err)
	}
	return link.Attrs().Index, nil
}

// LinkMAC is the hardware address of a device in the namespace.
func (ns *Namespace) LinkMAC(dev string) ([]byte, error) {
	link, err := ns.nl.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("netlab: %s in %s: %w", dev, ns.Name, err)
	}
	return link.Attrs().HardwareAddr, nil
}

// killInside kills every process whose network namespace is the one
// bound at path.
func killInside(path string) {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return
	}
	links, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) != nil || st.Ino != ns.Ino || st.Dev != ns.Dev {
			continue
		}
		if pid, err := strconv.Atoi(strings.Split(l, "/")[2]); err == nil && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
