package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// MuxOptions configure the mux program at load time.
type MuxOptions struct {
	// Addr is the mux's own IPv4 address: the source of every IPv4 outer
	// header; without it IPv4 instances are refused (an IPv6-only mux).
	Addr netip.Addr
	// Addr6 is the mux's own IPv6 address, the source of IPv6 outer
	// headers; without it IPv6 instances are refused.
	Addr6 netip.Addr
	// ConnTrackEntries sizes the Maglev and AWFD strategies' connection
	// table: how many connections it is meant to remember; 0 means 1M. It
	// has that many 4-slot buckets (conntrack.go: 64 bytes a bucket); the
	// memory is taken when the first Maglev or AWFD instance is set.
	ConnTrackEntries int
	// MaxNewConnsPerSecond caps the connection entries the Maglev strategy
	// inserts per second, over all CPUs (SYN-flood guard); 0 = no cap.
	MaxNewConnsPerSecond uint64
	// PinDir, when set, is the bpffs directory where the attachment and the
	// maps whose content outlives a daemon are pinned (pins.go); a program
	// pinned there by an earlier daemon is adopted: Attach swaps in this one.
	PinDir string
	// Spec, when set, is a build of bpf/mux.c to load instead of the one
	// embedded here, such as one compiled with more programs in it. LoadMux
	// sets its constants and sizes its maps as for its own build (on a
	// copy: Spec itself is not changed) and loads all of it; Collection
	// hands out what it loaded (build.go).
	Spec *ebpf.CollectionSpec
}

// Mux is the loaded mux program and its maps.
type Mux struct {
	mu        sync.Mutex
	objs      muxObjects
	coll      *ebpf.Collection // MuxOptions.Spec as loaded (nil: the embedded build)
	extra     *ebpf.Collection // what of it the mux does not use itself
	capture   captureData      // capture_on's data section (capture.go)
	counters  *counterSet
	instances map[string]*muxInstance
	slots     []bool // instance table slots in use (MAX_TABLES: limits.go)

	pinDir string // "" = nothing pinned

	addr, addr6 netip.Addr // the outer sources: an instance needs its family's

	ct      ctLayout // the connection table's shape (conntrack.go)
	ctSeed  uint32   // its hash seed
	ctReady bool     // the connection table exists

	spec             *ebpf.CollectionSpec // as loaded: where strategies read their layouts (muxspi.MuxHost)
	strategyCounters []StrategyCounters   // the strategies' decision counters (mux_strategy.go)

	vips  *vipTable // the VIP front and records (vips.go)
	ports portSets  // port_sets entries of VIPs with many port ranges (mux_ports.go)

	traffic *muxTraffic // per-VIP and per-server counters' slots (mux_traffic.go)

	epoch     *wordArray    // the next-hop cache's epoch (bpf/include/nexthop.h)
	epochMu   sync.Mutex    // FlushNextHops against Close: callers may outlive the mux
	unmapped  bool          // epoch unmapped by Close
	nextHops  nextHopTables // the daemon's published next hops (nexthop_table.go)
	stopEpoch chan struct{} // ends the epoch ticker
	epochDone chan struct{}

	// predecessor is the epoch of a predecessor's pinned program, ticked
	// with this one's until Attach swaps this program in (under epochMu;
	// nexthop_predecessor.go).
	predecessor *predecessorNextHops
}

// muxInstance is one load-balancer instance's tables in the kernel, and the
// Go copy of what they hold, against which deltas are checked before any
// kernel word is written.
type muxInstance struct {
	cfg     forwarding.Instance
	slot    uint32
	buckets *bucketArray
	servers *wordArray
	// servers6 holds an IPv6 instance's server addresses by id (nil for
	// IPv4): servers6.go.
	servers6 *ebpf.Map
	chains   *chainTable
	table    *forwarding.Table
	// state is the strategy's own per-instance maps (nil: none), see
	// mux_strategy.go.
	state muxspi.InstanceState
	// traffic hands out the servers' counter slots (mux_traffic.go; nil:
	// servers are not counted apart).
	traffic *muxTraffic
}

// muxFastShapeOff turns off the mux's straight-line path for its most
// common packet (bpf/include/mux_fast.h): the tests compare the program
// with and without it.
var muxFastShapeOff = false

// LoadMux loads the mux program; it forwards nothing until an instance is set.
func LoadMux(opts MuxOptions) (*Mux, error) {
	if !opts.Addr.IsValid() && !opts.Addr6.IsValid() {
		return nil, fmt.Errorf("mux has no address: set its IPv4 address, its IPv6 address, or both")
	}
	if opts.Addr.IsValid() && (!opts.Addr.Is4() || opts.Addr.IsUnspecified()) {
		return nil, fmt.Errorf("mux address %v is not a unicast IPv4 address", opts.Addr)
	}
	spec, err := muxSpec(opts.Spec)
	if err != nil {
		return nil, err
	}
	limits, err := muxLimits()
	if err != nil {
		return nil, err
	}
	if opts.Addr.IsValid() {
		if err := spec.Variables["mux_addr"].Set(opts.Addr.As4()); err != nil {
			return nil, err
		}
	}
	if muxFastShapeOff {
		if err := spec.Variables["mux_fast_shape"].Set(uint32(0)); err != nil {
			return nil, fmt.Errorf("mux_fast_shape: %w", err)
		}
	}
	if opts.Addr6.IsValid() {
		if !is6(opts.Addr6) || !opts.Addr6.IsGlobalUnicast() {
			return nil, fmt.Errorf("mux IPv6 address %v is not a global unicast IPv6 address", opts.Addr6)
		}
		if err := spec.Variables["mux_addr6"].Set(opts.Addr6.As16()); err != nil {
			return nil, err
		}
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	entries := opts.ConnTrackEntries
	if entries <= 0 {
		entries = 1 << 20
	}
	m := &Mux{instances: map[string]*muxInstance{}, slots: make([]bool, limits.tables)}
	if err := m.sizeConnTrack(spec, entries); err != nil {
		return nil, err
	}
	perCPU := (opts.MaxNewConnsPerSecond + uint64(cpus) - 1) / uint64(cpus)
	if err := spec.Variables["max_inserts_per_cpu_second"].Set(perCPU); err != nil {
		return nil, err
	}
	m.pinDir = opts.PinDir
	m.addr, m.addr6 = opts.Addr, opts.Addr6
	if m.pinDir != "" {
		if err := ensureBPFFS(m.pinDir); err != nil {
			return nil, err
		}
	}
	adopted := pinnedMaps(m.pinDir, spec, muxStateMaps)
	defer closeMaps(adopted)
	if err := m.prepareConnTrack(spec, adopted); err != nil {
		return nil, err
	}
	copts := &ebpf.CollectionOptions{MapReplacements: adopted}
	all := struct {
		muxObjects
		captureData
	}{}
	if opts.Spec != nil {
		m.coll, m.extra, err = loadWhole(spec, copts, &all)
	} else {
		err = spec.LoadAndAssign(&all, copts)
	}
	m.objs, m.capture = all.muxObjects, all.captureData
	if err != nil {
		return nil, fmt.Errorf("loading mux program: %w", err)
	}
	if m.counters, err = newCounterSet(spec, m.objs.MuxCounters, "mux_counter", "MUX_"); err != nil {
		m.closeLoaded()
		return nil, err
	}
	m.spec = spec
	if err := m.loadStrategyCounters(); err != nil {
		m.closeLoaded()
		return nil, err
	}
	if m.traffic, err = newMuxTraffic(&m.objs); err != nil {
		m.closeLoaded()
		return nil, err
	}
	if err := m.adoptState(adopted); err != nil {
		m.closeLoaded()
		return nil, err
	}
	if m.epoch, err = mapWords(m.objs.NexthopEpoch); err != nil {
		m.closeLoaded()
		return nil, err
	}
	if m.nextHops, err = mapNextHopTables(m.objs.NexthopTable, m.objs.Nexthop6Table); err != nil {
		unix.Munmap(m.epoch.mem)
		m.closeLoaded()
		return nil, err
	}
	front, err := mapWords(m.objs.VipFront)
	if err != nil {
		m.closeLoaded()
		return nil, err
	}
	records, err := mapWords(m.objs.VipRecords)
	if err != nil {
		unix.Munmap(front.mem)
		m.closeLoaded()
		return nil, err
	}
	m.vips = newVIPTable(front, records)
	if m.vips.front6, err = mapWords(m.objs.Vip6Front); err != nil {
		unix.Munmap(front.mem)
		unix.Munmap(records.mem)
		m.closeLoaded()
		return nil, err
	}
	m.vips.addrs6 = m.objs.Vip6Addrs
	m.predecessor = adoptPredecessorNextHops(m.pinDir, spec)
	m.FlushNextHops()
	m.stopEpoch, m.epochDone = make(chan struct{}), make(chan struct{})
	go m.tickEpoch()
	return m, nil
}

// FlushNextHops makes every CPU look its next hops up again: the daemon
// calls it when routes or neighbours change; a ticker calls it every second.
func (m *Mux) FlushNextHops() {
	m.epochMu.Lock()
	defer m.epochMu.Unlock()
	if !m.unmapped { // a route watcher may still call after Close
		m.epoch.store(0, m.epoch.load(0)+1)
		m.predecessor.flush()
	}
}

func (m *Mux) tickEpoch() {
	defer close(m.epochDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-m.stopEpoch:
			return
		case <-t.C:
			m.FlushNextHops()
		}
	}
}

// closeLoaded closes what LoadMux loaded, when it fails after loading.
func (m *Mux) closeLoaded() {
	if m.extra != nil {
		m.extra.Close()
	}
	m.objs.Close()
}

// muxSpec is the build LoadMux loads: a copy of the caller's, or the
// embedded one.
func muxSpec(other *ebpf.CollectionSpec) (*ebpf.CollectionSpec, error) {
	if other != nil {
		return other.Copy(), nil
	}
	return loadMux()
}

// Program is the XDP program, for attaching or test runs.
func (m *Mux) Program() *ebpf.Program { return m.objs.BeamerMux }

// Addrs are the mux's own addresses (MuxOptions.Addr, Addr6): the source
// of its encapsulated packets, and of its program's FIB lookups.
func (m *Mux) Addrs() (netip.Addr, netip.Addr) { return m.addr, m.addr6 }

// Collection is everything LoadMux loaded from MuxOptions.Spec, by the
// object's names: the mux's own programs, maps and variables and what
// that build adds (nil without MuxOptions.Spec). All of it belongs to the
// Mux and is closed by Close: do not close it, nor write the maps the mux
// keeps itself.
func (m *Mux) Collection() *ebpf.Collection { return m.coll }

// Counters returns every decision counter summed over CPUs.
func (m *Mux) Counters() (map[string]uint64, error) { return m.counters.Read() }

// CounterNames lists the counters in the order the program defines them.
func (m *Mux) CounterNames() []string { return m.counters.Names() }

// XDPMode selects how the program is attached.
type XDPMode int

const (
	XDPDriver  XDPMode = iota // native, in the driver (veth supports it)
	XDPGeneric                // in the stack, for any device
)

// Attach attaches the mux to the named interface. Closing the link detaches,
// unless it is pinned (MuxOptions.PinDir): then the program stays attached
// after the process ends, and Attach in the next process swaps its own
// program into the pinned link at once (the attach mode stays the pinned
// link's).
func (m *Mux) Attach(iface string, mode XDPMode) (link.Link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	flags := link.XDPDriverMode
	if mode == XDPGeneric {
		flags = link.XDPGenericMode
	}
	if err := m.pinTailCalls(); err != nil {
		return nil, err
	}
	l, _, err := adoptOrAttach(m.pinDir, m.objs.BeamerMux, func() (link.Link, error) {
		return link.AttachXDP(link.XDPOptions{Program: m.objs.BeamerMux, Interface: ifi.Index, Flags: flags})
	})
	if err != nil {
		return nil, fmt.Errorf("attaching mux to %s: %w", iface, err)
	}
	m.releasePredecessor() // its program runs no more
	if err := m.commitTailCalls(); err != nil {
		// Swapped in all the same, its array held by the other pin:
		// said, so that the daemon does not start on a half-made pin.
		l.Close()
		return nil, err
	}
	return l, nil
}

func (m *Mux) releasePredecessor() {
	m.epochMu.Lock()
	defer m.epochMu.Unlock()
	m.predecessor.close()
	m.predecessor = nil
}

// Close releases the tables and the program.
func (m *Mux) Close() error {
	m.capture.close()
	close(m.stopEpoch)
	<-m.epochDone
	m.releasePredecessor()
	m.epochMu.Lock()
	m.unmapped = true
	unix.Munmap(m.epoch.mem)
	m.epochMu.Unlock()
	m.nextHops.v4.close()
	m.nextHops.v6.close()
	unix.Munmap(m.vips.front.mem)
	unix.Munmap(m.vips.records.mem)
	unix.Munmap(m.vips.front6.mem)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range m.instances {
		in.close()
	}
	m.instances = nil
	if m.extra != nil {
		m.extra.Close()
	}
	return m.objs.Close()
}

// Generation is the generation of the named instance's loaded table.
func (m *Mux) Generation(name string) (uint32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return 0, false
	}
	return in.table.Generation, true
}

// ErrUnknownInstance is returned for deltas to an instance not loaded.
var ErrUnknownInstance = muxspi.ErrUnknownInstance

// SetInstance loads a complete table for an instance (at start, or to resync
// from a snapshot), replacing what the instance had. The new table is built
// in fresh kernel arrays and published by rewriting the VIP records, so
// packets see the old table or the new one, never a mix.
func (m *Mux) SetInstance(cfg forwarding.Instance, t *forwarding.Table) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if uint32(len(t.Buckets)) != cfg.Buckets {
		return fmt.Errorf("%w: instance %q has %d buckets, table %d", forwarding.ErrInvalid, cfg.Name, cfg.Buckets, len(t.Buckets))
	}
	if err := t.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkVIPsFree(cfg); err != nil {
		return err
	}
	if err := m.checkFamily(cfg); err != nil {
		return err
	}
	if err := m.vips.fits(cfg.VIPs); err != nil {
		return err
	}
	if err := muxStrategyOf(cfg).Prepare(muxHost{m}); err != nil {
		return err
	}
	slot, ok := m.freeSlot()
	if !ok {
		return fmt.Errorf("dataplane: all %d table slots in use", len(m.slots))
	}
	in := &muxInstance{cfg: cfg, slot: slot, table: &forwarding.Table{}, traffic: m.traffic}
	if err := in.build(t); err != nil {
		in.close()
		return err
	}
	if err := m.objs.BucketTables.Put(slot, in.buckets.words.m); err != nil {
		in.close()
		return fmt.Errorf("installing bucket table: %w", err)
	}
	if err := m.objs.ChainTables.Put(slot, in.chains.m); err != nil {
		m.objs.BucketTables.Delete(slot)
		in.close()
		return fmt.Errorf("installing chain table: %w", err)
	}
	if err := m.objs.ServerTables.Put(slot, in.servers.m); err != nil {
		m.objs.BucketTables.Delete(slot)
		m.objs.ChainTables.Delete(slot)
		in.close()
		return fmt.Errorf("installing server table: %w", err)
	}
	if in.servers6 != nil {
		if err := m.objs.Server6Tables.Put(slot, in.servers6); err != nil {
			m.objs.BucketTables.Delete(slot)
			m.objs.ChainTables.Delete(slot)
			m.objs.ServerTables.Delete(slot)
			in.close()
			return fmt.Errorf("installing IPv6 server table: %w", err)
		}
	}
	old := m.instances[cfg.Name]
	if err := m.installState(in, old); err != nil {
		m.objs.BucketTables.Delete(slot)
		m.objs.ChainTables.Delete(slot)
		m.objs.ServerTables.Delete(slot)
		if in.servers6 != nil {
			m.objs.Server6Tables.Delete(slot)
		}
		in.close()
		return err
	}
	m.slots[slot] = true
	if err := m.publish(in); err != nil {
		return err
	}
	m.instances[cfg.Name] = in
	if old != nil {
		m.unpublishStale(old, cfg)
		m.release(old)
	}
	m.traffic.keepServers(cfg.Name, in.table.Servers)
	return nil
}

// installState puts the strategy's per-instance maps in the new slot,
// carrying over what the strategy keeps from the instance it replaces
// (muxspi.Inheritor), and tells it the table is there (muxspi.TableWatcher).
func (m *Mux) installState(in, old *muxInstance) error {
	if in.state == nil {
		return nil
	}
	if h, ok := in.state.(muxspi.Inheritor); ok && old != nil && old.state != nil {
		h.Inherit(old.state)
	}
	if err := in.state.Install(muxHost{m}, in.slot); err != nil {
		return err
	}
	if err := m.stateApplied(in); err != nil {
		in.state.Uninstall(muxHost{m}, in.slot)
		return err
	}
	return nil
}

// build fills fresh kernel tables with t.
func (in *muxInstance) build(t *forwarding.Table) error {
	var err error
	if in.buckets, err = newBucketArray(in.cfg.Buckets); err != nil {
		return err
	}
	if in.servers, err = newWordArray(uint32(muxLimit().serverTable), false); err != nil {
		return err
	}
	if in.chains, err = newChainTable(chainTableSize(in.cfg)); err != nil {
		return err
	}
	if family6(in.cfg) {
		if in.servers6, err = newServer6Array(); err != nil {
			return err
		}
	}
	for id, s := range t.Servers {
		if err := in.storeServer(id, s, graceWait); err != nil {
			return err
		}
	}
	for i, b := range t.Buckets {
		ref, _, err := in.chains.acquire(b.History)
		if err != nil {
			return err
		}
		in.buckets.set(uint32(i), b, ref, in.keepChanged())
	}
	in.buckets.settle()
	in.state, err = muxStrategyOf(in.cfg).NewState(in.cfg, t)
	in.table = t.Clone()
	return err
}

// keepChanged: the strategy reads the change time of buckets without
// history (Prism marks migrating bins by it); Beamer's option carries the
// change time only with a history.
func (in *muxInstance) keepChanged() bool { return !muxStrategyOf(in.cfg).Histories() }

func (in *muxInstance) close() {
	in.buckets.close()
	in.servers.close()
	if in.servers6 != nil {
		in.servers6.Close()
	}
	in.chains.close()
	if in.state != nil {
		in.state.Close()
	}
}

// ApplyDelta applies one generation to a loaded instance. The delta is
// checked against the instance's table first; a bad delta changes nothing.
// Words are written in an order that keeps every packet's view valid: new
// servers, then the histories new bucket words name, then the buckets, then
// the VIP records with the new generation, and only then removed servers
// and histories no bucket names any more.
func (m *Mux) ApplyDelta(name string, d *forwarding.Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownInstance, name)
	}
	if err := in.table.Check(d); err != nil {
		return err
	}
	for _, c := range d.Servers {
		if !c.Remove {
			if err := in.storeServer(c.ID, c.Server, m.vips.grace); err != nil {
				return err
			}
		}
	}
	if in.state != nil {
		// The strategy's entries a moved bucket needs (Prism: the MCT
		// entries protecting its connections) before the bucket words.
		if err := in.state.Before(d); err != nil {
			return err
		}
	}
	old := make([]uint16, 0, len(d.Buckets))
	for _, c := range d.Buckets {
		ref, _, err := in.chains.acquire(c.Bucket.History)
		if err != nil {
			// The kernel refused a map write: give back what this delta
			// took so far; the bucket words already written name valid
			// entries, and the caller reloads the instance whole.
			return err
		}
		old = append(old, wordRef(in.buckets.get(c.Index)))
		in.buckets.set(c.Index, c.Bucket, ref, in.keepChanged())
	}
	in.buckets.settle() // block summaries of one owner again (cleared ones are safe, only slower)
	if err := in.table.Apply(d); err != nil {
		return err // cannot happen after Check
	}
	if err := m.stateApplied(in); err != nil {
		return err
	}
	if err := m.publishVersion(in); err != nil {
		return err
	}
	for _, r := range old {
		in.chains.release(r)
	}
	if in.state != nil {
		in.state.After(d)
	}
	for _, c := range d.Servers {
		if c.Remove {
			in.servers.store(uint32(c.ID), 0)
			m.traffic.forgetServer(name, c.ID)
		}
	}
	return nil
}

// RemoveInstance stops forwarding the instance's VIPs and frees its tables.
func (m *Mux) RemoveInstance(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownInstance, name)
	}
	for _, v := range in.cfg.VIPs {
		m.vips.remove(v)
		m.forgetVIP(v)
		m.traffic.forgetVIP(v)
	}
	delete(m.instances, name)
	m.release(in)
	m.traffic.keepServers(name, nil)
	return nil
}

// checkFamily refuses an instance whose packets this mux could not send:
// an IPv6 instance needs the mux's IPv6 address (the outer source of GUE
// over IPv6), an IPv4 one its IPv4 address.
func (m *Mux) checkFamily(cfg forwarding.Instance) error {
	if family6(cfg) && !m.addr6.IsValid() {
		return fmt.Errorf("dataplane: IPv6 instance %q: this mux has no IPv6 address to send from (MuxOptions.Addr6)", cfg.Name)
	}
	if !family6(cfg) && !m.addr.IsValid() {
		return fmt.Errorf("dataplane: IPv4 instance %q: this mux has no IPv4 address to send from (MuxOptions.Addr)", cfg.Name)
	}
	return nil
}

func (m *Mux) checkVIPsFree(cfg forwarding.Instance) error {
	n := len(cfg.VIPs)
	for name, in := range m.instances {
		if name != cfg.Name {
			n += len(in.cfg.VIPs)
		}
	}
	if maxVIPs := muxLimit().vips; n > maxVIPs {
		return fmt.Errorf("dataplane: %d VIPs in all, a mux forwards at most %d", n, maxVIPs)
	}
	for name, in := range m.instances {
		if name == cfg.Name {
			continue
		}
		for _, v := range in.cfg.VIPs {
			for _, w := range cfg.VIPs {
				if v == w {
					return fmt.Errorf("dataplane: VIP %v already belongs to instance %q", v, name)
				}
			}
		}
	}
	return nil
}

func (m *Mux) freeSlot() (uint32, bool) {
	for i, used := range m.slots {
		if !used {
			return uint32(i), true
		}
	}
	return 0, false
}

// publish writes fresh VIP records naming the instance's slot and
// generation, and points the VIPs' front words at them.
func (m *Mux) publish(in *muxInstance) error {
	for _, v := range in.cfg.VIPs {
		rec, published, err := m.vipRecord(in, v) // mux_ports.go: the port policy
		if err != nil {
			return err
		}
		if rec.Stats, err = m.traffic.vipStat(v); err != nil { // mux_traffic.go
			return err
		}
		if err := m.vips.set(v, rec); err != nil {
			return fmt.Errorf("publishing VIP %v: %w", v, err)
		}
		published()
	}
	return nil
}

// publishVersion stores the instance's generation and incarnation in its
// VIPs' records: the last step of a delta.
func (m *Mux) publishVersion(in *muxInstance) error {
	for _, v := range in.cfg.VIPs {
		if err := m.vips.setVersion(v, in.table.Generation, in.table.Incarnation); err != nil {
			return err
		}
	}
	return nil
}

// unpublishStale removes VIPs the old configuration had and the new lacks.
func (m *Mux) unpublishStale(old *muxInstance, cfg forwarding.Instance) {
	for _, v := range old.cfg.VIPs {
		keep := false
		for _, w := range cfg.VIPs {
			keep = keep || v == w
		}
		if !keep {
			m.vips.remove(v)
			m.forgetVIP(v)
			m.traffic.forgetVIP(v)
		}
	}
}

// release frees an instance's slot. The kernel keeps the arrays alive until
// packets that already hold them are done (RCU).
func (m *Mux) release(in *muxInstance) {
	m.objs.BucketTables.Delete(in.slot)
	m.objs.ChainTables.Delete(in.slot)
	m.objs.ServerTables.Delete(in.slot)
	if in.servers6 != nil {
		m.objs.Server6Tables.Delete(in.slot)
	}
	if in.state != nil {
		in.state.Uninstall(muxHost{m}, in.slot)
	}
	m.slots[in.slot] = false
	in.close()
}

// ChainStats tells how full the named instance's history table is: the
// references bucket words name now, its size, and how many bucket
// histories were left out because it was full (those buckets forward, but
// their moved connections cannot be chained).
func (m *Mux) ChainStats(name string) (used, size int, overflow uint64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return 0, 0, 0, false
	}
	return in.chains.used(), int(in.chains.size), in.chains.overflow, true
}

// ServerAddrs lists the addresses of an instance's servers, for next-hop
// resolution.
func (m *Mux) ServerAddrs(name string) []netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return nil
	}
	out := make([]netip.Addr, 0, len(in.table.Servers))
	for _, s := range in.table.Servers {
		out = append(out, s.Addr)
	}
	return out
}
