// Package nodestate records what a daemon changed on its node — sysctls,
// addresses on loopback, MPTCP endpoints — in a small file before it makes
// each change, and undoes exactly that on exit. A daemon that dies without
// undoing (SIGKILL, crash) leaves the file behind: its successor reads it,
// keeps the original values it names (not the values the dead process set)
// and undoes them when it exits in turn.
package nodestate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/beamer-lb/beamer/pkg/node/mptcp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultDir holds the records: a tmpfs, emptied at boot like the kernel
// state the records describe.
const DefaultDir = "/run/beamer"

// Sysctl is one changed kernel parameter and the value it had before.
type Sysctl struct {
	Key      string `json:"key"` // path under /proc/sys, e.g. net/ipv4/conf/eth0/forwarding
	Original string `json:"original"`
}

// Endpoint is an MPTCP endpoint the daemon added.
type Endpoint struct {
	Addr netip.Addr `json:"addr"`
	Port uint16     `json:"port"`
}

type record struct {
	Sysctls   []Sysctl     `json:"sysctls,omitempty"`
	LoAddrs   []netip.Addr `json:"lo_addrs,omitempty"`
	Endpoints []Endpoint   `json:"mptcp_endpoints,omitempty"`
}

// Record is the on-disk list of one daemon's changes.
type Record struct {
	path string
	mu   sync.Mutex
	r    record
}

// Open reads the record at path, or starts an empty one. A record found
// there is what an earlier daemon of the same role left when it died.
func Open(path string) (*Record, error) {
	rec := &Record{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &rec.r); err != nil {
		return nil, fmt.Errorf("node state %s: unreadable (%v); remove it after checking the sysctls it names", path, err)
	}
	return rec, nil
}

// Inherited says whether the record came from a daemon that did not undo
// its changes.
func (r *Record) Inherited() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.r.Sysctls)+len(r.r.LoAddrs)+len(r.r.Endpoints) > 0
}

// Path is the record's file.
func (r *Record) Path() string { return r.path }

func (r *Record) save() error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("node state: %w", err)
	}
	b, _ := json.Marshal(r.r)
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("node state: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("node state: %w", err)
	}
	return nil
}

func dotted(key string) string { return strings.ReplaceAll(key, "/", ".") }

// SetSysctl records the parameter's original value (once: a value recorded
// by a dead predecessor stays the original) and then sets it.
func (r *Record) SetSysctl(key, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.ContainsFunc(r.r.Sysctls, func(s Sysctl) bool { return s.Key == key }) {
		old, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			return fmt.Errorf("sysctl %s: %w", dotted(key), err)
		}
		r.r.Sysctls = append(r.r.Sysctls, Sysctl{Key: key, Original: strings.TrimSpace(string(old))})
		if err := r.save(); err != nil {
			return err
		}
	}
	if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s: %w", dotted(key), err)
	}
	return nil
}

// AddLoAddr puts a host address (/32, /128) on loopback and records it. An address already there
// that the record does not name belongs to someone else: left alone, and
// not removed on Undo.
func (r *Record) AddLoAddr(a netip.Addr) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if slices.Contains(r.r.LoAddrs, a) {
		err := netlink.AddrAdd(lo, loAddr(a))
		if err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("VIP %v on loopback: %w", a, err)
		}
		return nil
	}
	r.r.LoAddrs = append(r.r.LoAddrs, a)
	if err := r.save(); err != nil {
		return err
	}
	err = netlink.AddrAdd(lo, loAddr(a))
	if errors.Is(err, syscall.EEXIST) {
		r.r.LoAddrs = slices.DeleteFunc(r.r.LoAddrs, func(x netip.Addr) bool { return x == a })
		return r.save()
	}
	if err != nil {
		return fmt.Errorf("VIP %v on loopback: %w", a, err)
	}
	return nil
}

// loAddr is a VIP as a host address (/32, /128) on loopback; an IPv6 one
// skips duplicate address detection, which would hold it tentative.
func loAddr(a netip.Addr) *netlink.Addr {
	n, _ := netlink.ParseAddr(netip.PrefixFrom(a, a.BitLen()).String())
	if a.Is6() {
		n.Flags |= unix.IFA_F_NODAD
	}
	return n
}

// SetIPv6Forwarding turns IPv6 forwarding on for an interface, which
// bpf_fib_lookup needs for IPv6 next hops, without the side effect it has
// on hosts that configure themselves from router advertisements: with
// forwarding on, accept_ra 1 stops accepting them (and their default
// route would expire), so accept_ra 1 becomes 2, "accept even when
// forwarding". Both are recorded and restored like every sysctl.
func (r *Record) SetIPv6Forwarding(iface string) error {
	ra, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + iface + "/accept_ra")
	if err != nil {
		return fmt.Errorf("IPv6 on %s: %w (is IPv6 disabled?)", iface, err)
	}
	if strings.TrimSpace(string(ra)) == "1" {
		if err := r.SetSysctl("net/ipv6/conf/"+iface+"/accept_ra", "2"); err != nil {
			return err
		}
	}
	return r.SetSysctl("net/ipv6/conf/"+iface+"/forwarding", "1")
}

// AddEndpoint adds an MPTCP signal endpoint on loopback and records it. An
// endpoint the record names that is still there (predecessor died) is kept.
func (r *Record) AddEndpoint(c *mptcp.Client, e mptcp.Endpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := Endpoint{Addr: e.Addr, Port: e.Port}
	if slices.Contains(r.r.Endpoints, rec) {
		if _, ok := findEndpoint(c, rec); ok {
			return nil
		}
	} else {
		r.r.Endpoints = append(r.r.Endpoints, rec)
		if err := r.save(); err != nil {
			return err
		}
	}
	return c.Add(e)
}

func findEndpoint(c *mptcp.Client, e Endpoint) (uint8, bool) {
	list, err := c.List()
	if err != nil {
		return 0, false
	}
	for _, x := range list {
		if x.Addr == e.Addr && x.Port == e.Port {
			return x.ID, true
		}
	}
	return 0, false
}

// Undo removes the recorded endpoints and addresses and restores the
// sysctls, newest change first, then deletes the record. What cannot be
// undone stays in the record (and the file) for a later attempt.
func (r *Record) Undo() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if len(r.r.Endpoints) > 0 {
		c, err := mptcp.Dial()
		if err != nil {
			errs = append(errs, err)
		} else {
			var left []Endpoint
			for _, e := range slices.Backward(r.r.Endpoints) {
				if id, ok := findEndpoint(c, e); ok {
					if err := c.Delete(id); err != nil {
						errs = append(errs, err)
						left = append(left, e)
					}
				}
			}
			r.r.Endpoints = left
			c.Close()
		}
	}
	if len(r.r.LoAddrs) > 0 {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			errs = append(errs, err)
		} else {
			var left []netip.Addr
			for _, a := range r.r.LoAddrs {
				if err := netlink.AddrDel(lo, loAddr(a)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
					errs = append(errs, fmt.Errorf("removing VIP %v from loopback: %w", a, err))
					left = append(left, a)
				}
			}
			r.r.LoAddrs = left
		}
	}
	var left []Sysctl
	for _, s := range slices.Backward(r.r.Sysctls) {
		err := os.WriteFile("/proc/sys/"+s.Key, []byte(s.Original), 0o644)
		if errors.Is(err, os.ErrNotExist) {
			continue // the interface is gone, and its settings with it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", dotted(s.Key), s.Original, err))
			left = append(left, s)
		}
	}
	r.r.Sysctls = left
	if len(errs) > 0 {
		r.save()
		return errors.Join(errs...)
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("node state: %w", err)
	}
	return nil
}

// NetnsID names the network namespace of the calling thread by its inode,
// so that daemons of one role in several namespaces (a lab) keep separate
// records and pins, while a daemon restarted in the same namespace finds
// its predecessor's.
func NetnsID() (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return "", fmt.Errorf("network namespace: %w", err)
	}
	return fmt.Sprint(st.Ino), nil
}

// Name is the default name of a daemon's record and pins: its role, its
// namespace and its interface.
func Name(role, iface string) (string, error) {
	ns, err := NetnsID()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%s-%s", role, ns, iface), nil
}

// PruneLoAddrs removes the recorded loopback addresses not in keep: a
// daemon that took over its predecessor's record (a restart that kept the
// node set up) drops what its own configuration no longer serves, as a
// stop that undid everything and a fresh start would have.
func (r *Record) PruneLoAddrs(keep []netip.Addr) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []netip.Addr
	for _, a := range r.r.LoAddrs {
		if !slices.Contains(keep, a) {
			gone = append(gone, a)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	for _, a := range gone {
		if err := netlink.AddrDel(lo, loAddr(a)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("removing VIP %v from loopback: %w", a, err)
		}
		r.r.LoAddrs = slices.DeleteFunc(r.r.LoAddrs, func(x netip.Addr) bool { return x == a })
	}
	return r.save()
}

// PruneEndpoints removes the recorded MPTCP endpoints not in keep (see
// PruneLoAddrs).
func (r *Record) PruneEndpoints(keep []Endpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []Endpoint
	for _, e := range r.r.Endpoints {
		if !slices.Contains(keep, e) {
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	c, err := mptcp.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	for _, e := range gone {
		if id, ok := findEndpoint(c, e); ok {
			if err := c.Delete(id); err != nil {
				return fmt.Errorf("removing MPTCP endpoint %v port %d: %w", e.Addr, e.Port, err)
			}
		}
		r.r.Endpoints = slices.DeleteFunc(r.r.Endpoints, func(x Endpoint) bool { return x == e })
	}
	return r.save()
}
