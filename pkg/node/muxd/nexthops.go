package muxd

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Next hops, followed from the kernel's routes, neighbours and links.
//
// The XDP program reads each server's next hop from the tables the
// daemon publishes (dataplane.Mux.PublishNextHop; bpf/include/nexthop.h)
// and asks the FIB, through its per-CPU cache, only for a server without
// an entry. This follower keeps the entries true:
//   - a neighbour update changes the MAC of every server behind that
//     neighbour at once, or withdraws them when the neighbour is gone or
//     unresolved (their packets ask the FIB, which answers no_neigh);
//   - a route update withdraws every server the route's prefix covers, and
//     a link update every server behind that device, then resolves them
//     again (a route query each): meanwhile their packets ask the FIB;
//   - servers without an entry (new, or withdrawn) are resolved again
//     when the daemon asks (a generation applied), when any neighbour
//     becomes usable, and every nextHopResyncEvery; every nextHopFullEvery
//     every server is resolved again (cost: two route queries per server,
//     and one neighbour listing per device), catching anything missed;
//   - a policy rule added or removed withdraws every entry and resolves
//     every server again (rules change rarely; which rules leave servers
//     to the FIB: dataplane.NextHopLookup);
//   - a device's IPv6 MTU, which changes without an event (a router
//     advertisement, a sysctl), is checked every nextHopResyncEvery: a
//     change withdraws the IPv6 servers behind the device, resolved again;
//   - a subscription that breaks (its socket overran) withdraws every
//     entry, subscribes again and resolves everything;
//   - the daemon stopping withdraws every entry (nothing follows them any
//     more, and a halted daemon's pinned program may forward on).
//
// Work is done in one goroutine, events first: resolution runs in chunks
// of nextHopChunk servers between events, so a pass over many servers
// never delays the reaction to a change by more than one chunk.
// Every event also flushes the program's cache (FlushNextHops), as before.
const (
	nextHopResyncEvery = 5 * time.Second
	nextHopFullEvery   = 30 * time.Second
	nextHopChunk       = 256
)

type nextHopFollower struct {
	d       *Daemon
	ns      netns.NsHandle
	nl      *netlink.Handle // its own: the daemon's is used by other goroutines
	subDone chan struct{}   // closed: the current subscriptions end
	request chan struct{}   // cap 1: resolve the servers without an entry
	neigh   chan netlink.NeighUpdate
	route   chan netlink.RouteUpdate
	link    chan netlink.LinkUpdate
	rule    chan struct{} // cap 1: a policy rule changed (nexthops_silent.go)

	uses map[dataplane.Neighbor]map[netip.Addr]bool // published servers behind each neighbour
	via  map[netip.Addr]dataplane.Neighbor          // the neighbour of each published server
	hop  map[netip.Addr]dataplane.ResolvedNextHop   // what was published

	queue      []netip.Addr // servers to resolve in this pass
	lookup     *dataplane.NextHopLookup
	unresolved int // servers left without an entry by the last pass

	leftToFIB map[string]bool // causes logged of servers the kernel cannot be asked about
	mtu6      map[int]int     // devices' IPv6 MTUs when last checked (checkMTU6)
}

// watchNextHops starts following; called in the mux's namespace.
func (d *Daemon) watchNextHops() error {
	ns, err := netns.Get()
	if err != nil {
		return err
	}
	// Entering a namespace (setns), which netlink does for every socket
	// made "at" one, takes CAP_SYS_ADMIN, and the packaged mux's unit does
	// not grant it. A daemon's whole process is in the mux's namespace:
	// its sockets are made where it is. Only an in-process test, whose
	// thread alone entered a namespace, needs them made in ns explicitly
	// (sockets made later, a renewed subscription's, are made on any
	// thread) — also when that thread is the process's first, whose
	// namespace /proc/self/ns/net shows.
	if proc, err := netns.GetFromPath("/proc/self/ns/net"); err == nil {
		if proc.Equal(ns) && everyThreadIn(ns) {
			ns.Close()
			ns = netns.None()
		}
		proc.Close()
	}
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return err
	}
	f := &nextHopFollower{d: d, ns: ns, nl: nl, request: make(chan struct{}, 1),
		uses: map[dataplane.Neighbor]map[netip.Addr]bool{}, via: map[netip.Addr]dataplane.Neighbor{},
		hop: map[netip.Addr]dataplane.ResolvedNextHop{}}
	if err := f.subscribe(); err != nil {
		f.unsubscribe()
		nl.Close()
		ns.Close()
		return err
	}
	d.nextHops = f
	go f.run()
	return nil
}

// everyThreadIn says whether every thread of the process is in ns (false
// when that cannot be read).
func everyThreadIn(ns netns.NsHandle) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return false
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false
	}
	for _, t := range tasks {
		in, err := os.Readlink("/proc/self/task/" + t.Name() + "/ns/net")
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil || in != want {
			return false
		}
	}
	return true
}

// resolveSoon asks for the servers without an entry to be resolved.
func (f *nextHopFollower) resolveSoon() {
	if f == nil {
		return
	}
	select {
	case f.request <- struct{}{}:
	default:
	}
}

// subscribe ends the subscriptions of before, if any, and subscribes to
// neighbour, route and link updates anew.
func (f *nextHopFollower) subscribe() error {
	f.unsubscribe()
	f.subDone = make(chan struct{})
	f.neigh = make(chan netlink.NeighUpdate, 256)
	f.route = make(chan netlink.RouteUpdate, 256)
	f.link = make(chan netlink.LinkUpdate, 64)
	if err := netlink.NeighSubscribeWithOptions(f.neigh, f.subDone, netlink.NeighSubscribeOptions{Namespace: &f.ns}); err != nil {
		return err
	}
	if err := netlink.RouteSubscribeWithOptions(f.route, f.subDone, netlink.RouteSubscribeOptions{Namespace: &f.ns}); err != nil {
		return err
	}
	f.rule = make(chan struct{}, 1)
	if err := netlink.LinkSubscribeWithOptions(f.link, f.subDone, netlink.LinkSubscribeOptions{Namespace: &f.ns}); err != nil {
		return err
	}
	return ruleSubscribe(f.ns, f.rule, f.subDone)
}

// unsubscribe closes the subscriptions' sockets and drains their channels
// until their readers end (a reader blocked on a full channel would
// never see its socket closed).
func (f *nextHopFollower) unsubscribe() {
	if f.subDone == nil {
		return
	}
	close(f.subDone)
	f.subDone = nil
	neigh, route, link := f.neigh, f.route, f.link
	go func() {
		for range neigh {
		}
	}()
	go func() {
		for range route {
		}
	}()
	go func() {
		for range link {
		}
	}()
}

func (f *nextHopFollower) stopped() bool {
	select {
	case <-f.d.stop:
		return true
	default:
		return false
	}
}

// broken handles a subscription that ended: withdraw all (nothing follows
// them now), subscribe again, resolve all. false when the daemon stops.
func (f *nextHopFollower) broken() bool {
	f.withdrawAll()
	for !f.stopped() {
		if err := f.subscribe(); err == nil {
			f.d.opts.Log.Warn("next-hop subscription broke: subscribed again, resolving every server")
			f.startPass(true)
			return true
		} else {
			f.d.opts.Log.Warn("next-hop subscription broke and cannot be renewed: servers' packets ask the FIB", "error", err)
		}
		select {
		case <-f.d.stop:
		case <-time.After(time.Second):
		}
	}
	return false
}

// take hands an update received from a subscription (ok) to on; a
// subscription that ended is renewed (broken). false: they ended for good,
// the daemon stops.
func take[U any](f *nextHopFollower, u U, ok bool, on func(U)) bool {
	if !ok {
		return f.broken()
	}
	on(u)
	return true
}

func (f *nextHopFollower) run() {
	defer f.ns.Close()
	defer f.nl.Close()
	defer f.unsubscribe()
	// Nothing follows the entries once the daemon stops (a halted daemon's
	// pinned program may forward on): its packets ask the FIB.
	defer f.withdrawAll()
	resync := time.NewTicker(nextHopResyncEvery)
	defer resync.Stop()
	lastFull := time.Now()
	f.startPass(true)
	for {
		// Events first, then a chunk of the pass, then wait.
		select {
		case <-f.d.stop:
			return
		case u, ok := <-f.neigh:
			if !take(f, u, ok, f.onNeigh) {
				return
			}
			continue
		case u, ok := <-f.route:
			if !take(f, u, ok, f.onRoute) {
				return
			}
			continue
		case u, ok := <-f.link:
			if !take(f, u, ok, f.onLink) {
				return
			}
			continue
		case u, ok := <-f.rule:
			if !take(f, u, ok, f.onRule) {
				return
			}
			continue
		default:
		}
		if len(f.queue) > 0 {
			f.resolveChunk()
			continue
		}
		select {
		case <-f.d.stop:
			return
		case u, ok := <-f.neigh:
			if !take(f, u, ok, f.onNeigh) {
				return
			}
		case u, ok := <-f.route:
			if !take(f, u, ok, f.onRoute) {
				return
			}
		case u, ok := <-f.link:
			if !take(f, u, ok, f.onLink) {
				return
			}
		case u, ok := <-f.rule:
			if !take(f, u, ok, f.onRule) {
				return
			}
		case <-f.request:
			f.startPass(false)
		case <-resync.C:
			full := time.Since(lastFull) >= nextHopFullEvery
			if full {
				lastFull = time.Now()
			}
			f.checkMTU6()
			f.startPass(full)
		}
	}
}

// servers are the servers of every instance.
func (f *nextHopFollower) servers() map[netip.Addr]bool {
	f.d.mu.Lock()
	names := make([]string, 0, len(f.d.instances))
	for n := range f.d.instances {
		names = append(names, n)
	}
	f.d.mu.Unlock()
	out := map[netip.Addr]bool{}
	for _, n := range names {
		for _, a := range f.d.mux.ServerAddrs(n) {
			out[a.Unmap()] = true
		}
	}
	return out
}

// startPass queues the servers to resolve (all, or those without an
// entry) and withdraws the entries of servers no longer in any table.
func (f *nextHopFollower) startPass(all bool) {
	current := f.servers()
	for a := range f.via {
		if !current[a] {
			f.withdraw(a)
		}
	}
	f.queue = f.queue[:0]
	for a := range current {
		if _, ok := f.via[a]; all || !ok {
			f.queue = append(f.queue, a)
		}
	}
	f.lookup = nil
	f.unresolved = 0
}

func (f *nextHopFollower) resolveChunk() {
	if f.lookup == nil {
		f.lookup = dataplane.NewNextHopLookup(f.nl, dataplane.NextHopQuery{NS: f.ns, Addr: f.d.opts.Address, Addr6: f.d.opts.Address6})
	}
	n := min(nextHopChunk, len(f.queue))
	for _, a := range f.queue[:n] {
		h, via, err := f.lookup.Resolve(a)
		if err != nil {
			f.withdraw(a)
			f.unresolved++
			f.noteLeftToFIB(err)
			continue
		}
		f.publish(a, h, via)
		if mtu, ok := f.lookup.ReadDeviceMTU6(via.LinkIndex); ok && !a.Is4() {
			if f.mtu6 == nil {
				f.mtu6 = map[int]int{}
			}
			f.mtu6[via.LinkIndex] = mtu // what checkMTU6 compares with
		}
	}
	f.queue = f.queue[n:]
}

// noteLeftToFIB logs, once per cause, why servers are left to the FIB
// although routed (a policy rule or a multipath route netlink cannot ask
// about as the program does: dataplane.LeftToFIBError).
func (f *nextHopFollower) noteLeftToFIB(err error) {
	var left *dataplane.LeftToFIBError
	if !errors.As(err, &left) || f.leftToFIB[left.Cause] {
		return
	}
	if f.leftToFIB == nil {
		f.leftToFIB = map[string]bool{}
	}
	f.leftToFIB[left.Cause] = true
	f.d.opts.Log.Info("next hops: servers left to the FIB (bpf_fib_lookup per packet, through its cache), logged once per cause",
		"cause", left.Cause, "first", left.Detail)
}

func (f *nextHopFollower) publish(a netip.Addr, h dataplane.ResolvedNextHop, via dataplane.Neighbor) {
	if old, ok := f.hop[a]; ok && f.via[a] == via && old.String() == h.String() {
		return // unchanged: no write
	}
	if err := f.d.mux.PublishNextHop(a, h); err != nil {
		f.withdraw(a) // the line is full: the FIB answers for it
		f.unresolved++
		return
	}
	if old, ok := f.via[a]; ok && old != via {
		delete(f.uses[old], a)
	}
	if f.uses[via] == nil {
		f.uses[via] = map[netip.Addr]bool{}
	}
	f.uses[via][a] = true
	f.via[a], f.hop[a] = via, h
}

func (f *nextHopFollower) withdraw(a netip.Addr) {
	via, ok := f.via[a]
	if !ok {
		return
	}
	f.d.mux.WithdrawNextHop(a)
	delete(f.uses[via], a)
	if len(f.uses[via]) == 0 {
		delete(f.uses, via)
	}
	delete(f.via, a)
	delete(f.hop, a)
}

func (f *nextHopFollower) withdrawAll() {
	f.d.mux.WithdrawAllNextHops()
	f.uses = map[dataplane.Neighbor]map[netip.Addr]bool{}
	f.via = map[netip.Addr]dataplane.Neighbor{}
	f.hop = map[netip.Addr]dataplane.ResolvedNextHop{}
	f.d.mux.FlushNextHops()
}

func (f *nextHopFollower) onNeigh(u netlink.NeighUpdate) {
	f.lookup = nil // its neighbour listings may be old now
	defer f.d.mux.FlushNextHops()
	ip, ok := netip.AddrFromSlice(u.IP)
	if !ok {
		return
	}
	n := dataplane.Neighbor{LinkIndex: u.LinkIndex, IP: ip.Unmap()}
	usable := u.Type == unix.RTM_NEWNEIGH && dataplane.NeighborUsable(u.State, u.HardwareAddr)
	servers := f.uses[n]
	if len(servers) == 0 {
		if usable {
			f.resolveSoon() // a server may have waited for it
		}
		return
	}
	for a := range servers {
		if !usable {
			f.withdraw(a)
			continue
		}
		h := f.hop[a]
		h.Dst = append(net.HardwareAddr(nil), u.HardwareAddr...)
		f.publish(a, h, n)
	}
	if !usable {
		f.resolveSoon()
	}
}

func (f *nextHopFollower) onRoute(u netlink.RouteUpdate) {
	f.lookup = nil
	defer f.d.mux.FlushNextHops()
	v6 := u.Family == netlink.FAMILY_V6
	var withdrawn bool
	for a := range f.via {
		if a.Is4() == v6 {
			continue // the other family's route
		}
		if u.Dst == nil || u.Dst.Contains(net.IP(a.AsSlice())) {
			f.withdraw(a)
			withdrawn = true
		}
	}
	if withdrawn || u.Type == unix.RTM_NEWROUTE {
		f.resolveSoon() // a new route may reach a server that had none
	}
}

func (f *nextHopFollower) onLink(u netlink.LinkUpdate) {
	f.lookup = nil
	defer f.d.mux.FlushNextHops()
	if u.Attrs() == nil {
		return
	}
	idx := u.Attrs().Index
	var withdrawn bool
	for a, via := range f.via {
		if via.LinkIndex == idx {
			f.withdraw(a)
			withdrawn = true
		}
	}
	if withdrawn {
		f.resolveSoon()
	}
}
