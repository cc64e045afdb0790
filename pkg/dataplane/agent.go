package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// AgentVIP is one VIP a server serves, with what the agent must know of its
// instance to daisy-chain: the bucket count B (the agent finds a packet's
// bucket as the mux did) and the chaining window (0 turns chaining off, as
// the Maglev strategy wants).
type AgentVIP struct {
	VIP         netip.Addr
	Buckets     uint32
	ChainWindow time.Duration
}

// AgentOptions configure the agent program at load time.
type AgentOptions struct {
	Addr netip.Addr // this server's IPv4 address (its DIP; may be unset when Addr6 is set)
	// Addr6 is this server's IPv6 address, the destination of GUE over
	// IPv6 for its IPv6 VIPs (agent6.go); unset: IPv6 VIPs are refused.
	Addr6   netip.Addr
	VIPs    []AgentVIP     // the VIPs it serves (on its loopback)
	Trusted []netip.Prefix // sources whose encapsulated packets are accepted
	// MaxClockSkew is how far the controller's clock may lead this
	// server's: an option's change time beyond now + skew is clamped, an
	// incarnation beyond it is not remembered (bpf/agent.c, "Sanity
	// bounds"). 0 means DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// MaxGenerationJump is how far a packet's generation may lead the one
	// remembered in the same incarnation and still be remembered. 0 means
	// DefaultMaxGenerationJump.
	MaxGenerationJump uint32
	// GenerationMemory is the rotation period T: the newest (incarnation,
	// generation) remembered is the largest seen in the last T to 2T, so a
	// forged one is forgotten within 2T. 0 means DefaultGenerationMemory;
	// negative turns the rotation off (tests drive Rotate themselves).
	GenerationMemory time.Duration
	// GUEPorts: UDP ports on which GUE from trusted sources is decapsulated,
	// besides forwarding.DefaultGUEPort, always (agent_gue.go).
	GUEPorts []uint16
	// PinDir, when set, is the bpffs directory where the attachment and the
	// maps whose content outlives a daemon are pinned (pins.go).
	PinDir string
	// Spec, when set, is a build of bpf/agent.c to load instead of the one
	// embedded here, such as one compiled with more programs in it.
	// LoadAgent sets its constants and sizes its maps as for its own build
	// (on a copy: Spec itself is not changed) and loads all of it;
	// Collection hands out what it loaded (build.go).
	Spec *ebpf.CollectionSpec
}

// Defaults of the agent's sanity bounds (docs/wire-format.md).
const (
	// NTP keeps servers within milliseconds; a minute tolerates a badly
	// kept clock and still bounds what a forged packet can do.
	DefaultMaxClockSkew = time.Minute
	// A controller publishes a handful of generations a second at most:
	// 65536 is hours of changes, more than any mux can lead the newest this
	// server saw within its memory period.
	DefaultMaxGenerationJump = 1 << 16
	// The newest state is remembered for one to two minutes after the
	// last packet that carried it.
	DefaultGenerationMemory = time.Minute
)

// Agent is the loaded server agent program and its maps.
type Agent struct {
	objs     agentObjects
	coll     *ebpf.Collection     // AgentOptions.Spec as loaded (nil: the embedded build)
	extra    *ebpf.Collection     // what of it the agent does not use itself
	capture  captureData          // capture_on's data section (capture.go)
	spec     *ebpf.CollectionSpec // as loaded, for the strategies' layouts
	counters *counterSet
	// strategyCounters: the built-in strategies' counters
	// (agent_strategy.go).
	strategyCounters []AgentStrategyCounters
	clock            *wordArray // word 0: Unix − boot time (ns); word 1: current generation word (0/1)
	seen             *wordArray // generation_seen: two words per VIP slot (one element: agent_seen_layout.go)
	vips             int
	pinDir           string

	stopRotate chan struct{}
	rotateDone chan struct{}
}

// LoadAgent validates the options and loads the agent program.
func LoadAgent(opts AgentOptions) (*Agent, error) {
	if err := checkAgentAddrs(opts); err != nil {
		return nil, err
	}
	if len(opts.VIPs) == 0 {
		return nil, fmt.Errorf("agent serves no VIP")
	}
	if len(opts.Trusted) == 0 {
		return nil, fmt.Errorf("agent trusts no source prefix: every encapsulated packet would be dropped")
	}
	total := uint64(0)
	seen := map[netip.Addr]bool{}
	for _, v := range opts.VIPs {
		if err := checkAgentVIP(v.VIP, opts, seen[v.VIP]); err != nil {
			return nil, err
		}
		seen[v.VIP] = true
		if v.Buckets == 0 || v.Buckets > 1<<24 {
			return nil, fmt.Errorf("VIP %v: bucket count %d must be in 1–%d", v.VIP, v.Buckets, 1<<24)
		}
		if err := forwarding.CheckChainWindow(v.ChainWindow); err != nil {
			return nil, fmt.Errorf("VIP %v: %w", v.VIP, err)
		}
		total += uint64(v.Buckets)
	}
	for _, p := range opts.Trusted {
		if !p.Addr().Is4() && !is6(p.Addr()) {
			return nil, fmt.Errorf("trusted prefix %v is neither IPv4 nor IPv6", p)
		}
	}
	if total > 1<<26 {
		return nil, fmt.Errorf("VIPs have %d buckets in all; at most %d", total, 1<<26)
	}

	spec, err := agentSpec(opts.Spec)
	if err != nil {
		return nil, err
	}
	if err := setAgentAddrs(spec, opts); err != nil {
		return nil, err
	}
	if err := setAgentFastSets(spec, opts); err != nil { // agent_fastset.go
		return nil, err
	}
	skew := opts.MaxClockSkew
	if skew == 0 {
		skew = DefaultMaxClockSkew
	}
	if skew < 0 || skew > 24*time.Hour {
		return nil, fmt.Errorf("maximum clock skew %v must be within 0–24h", skew)
	}
	jump := opts.MaxGenerationJump
	if jump == 0 {
		jump = DefaultMaxGenerationJump
	}
	if err := spec.Variables["max_skew"].Set(uint32(skew / time.Second)); err != nil {
		return nil, err
	}
	if err := spec.Variables["max_gen_jump"].Set(jump); err != nil {
		return nil, err
	}
	spec.Maps["bucket_changed"].MaxEntries = uint32(total)
	a := &Agent{vips: len(opts.VIPs), pinDir: opts.PinDir, spec: spec}
	if a.pinDir != "" {
		if err := ensureBPFFS(a.pinDir); err != nil {
			return nil, err
		}
	}
	adopted := agentPinnedMaps(a.pinDir, spec, opts.VIPs)
	defer closeMaps(adopted)
	// A pinned generation_seen of the layout before issue 27 (agent_seen_layout.go).
	var oldSeen []uint64
	if adopted["generation_seen"] == nil {
		oldSeen = pinnedSeenWords(agentStateDir(a.pinDir, opts.VIPs), spec)
	}
	copts := &ebpf.CollectionOptions{MapReplacements: adopted}
	all := struct {
		agentObjects
		captureData
	}{}
	if opts.Spec != nil {
		a.coll, a.extra, err = loadWhole(spec, copts, &all)
	} else {
		err = spec.LoadAndAssign(&all, copts)
	}
	a.objs, a.capture = all.agentObjects, all.captureData
	if err != nil {
		return nil, fmt.Errorf("loading agent program: %w", err)
	}
	if err := a.configure(spec, opts); err != nil {
		a.Close()
		return nil, err
	}
	a.restoreSeenWords(oldSeen)
	if err := a.pinState(opts.VIPs); err != nil {
		a.Close()
		return nil, err
	}
	// State a strategy adopted from a predecessor (Cheetah's keys) is used
	// by this program from its first packet, before the daemon looks at it.
	if err := a.strategiesLoaded(); err != nil {
		a.Close()
		return nil, err
	}
	if period := opts.GenerationMemory; period >= 0 {
		if period == 0 {
			period = DefaultGenerationMemory
		}
		a.stopRotate, a.rotateDone = make(chan struct{}), make(chan struct{})
		go a.rotateEvery(period)
	}
	return a, nil
}

func (a *Agent) rotateEvery(period time.Duration) {
	defer close(a.rotateDone)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-a.stopRotate:
			return
		case <-t.C:
			a.Rotate()
		}
	}
}

// Rotate starts a new memory period: the word of the period before last is
// cleared and becomes the one packets raise, so the newest remembered is
// the largest seen in this period and the previous one. A forged high
// (incarnation, generation) is thereby forgotten two periods after the last
// packet that carried it.
func (a *Agent) Rotate() {
	next := (a.clock.load(1) + 1) & 1
	for i := 0; i < a.vips; i++ {
		a.seen.store(uint32(2*i)+uint32(next), 0)
	}
	a.clock.store(1, next)
}

func (a *Agent) configure(spec *ebpf.CollectionSpec, opts AgentOptions) error {
	var err error
	if a.counters, err = newCounterSet(spec, a.objs.AgentCounters, "agent_counter", "AGENT_"); err != nil {
		return err
	}
	if err := a.loadStrategyCounters(); err != nil {
		return err
	}
	if a.clock, err = mapWords(a.objs.AgentClock); err != nil {
		return err
	}
	if a.seen, err = mapWords(a.objs.GenerationSeen); err != nil {
		return err
	}
	a.SyncClock(time.Now())
	base := uint32(0)
	for slot, v := range opts.VIPs {
		rec := agentAgentVip{Buckets: v.Buckets, BucketBase: base, Slot: uint32(slot), Window: uint32(v.ChainWindow / time.Second)}
		if is6(v.VIP) {
			err = a.objs.AgentVips6.Put(v.VIP.As16(), &rec)
		} else {
			err = a.objs.AgentVips.Put(v.VIP.As4(), &rec)
		}
		if err != nil {
			return fmt.Errorf("VIP %v: %w", v.VIP, err)
		}
		base += v.Buckets
	}
	if err := a.configureGUE(opts.GUEPorts); err != nil {
		return err
	}
	for _, p := range opts.Trusted {
		if is6(p.Addr()) {
			key := agentLpmV6Key{Prefixlen: uint32(p.Bits()), Addr: addr6Words(p.Masked().Addr())}
			if err := a.objs.TrustedSources6.Put(&key, uint8(1)); err != nil {
				return fmt.Errorf("trusted prefix %v: %w", p, err)
			}
			continue
		}
		key := agentLpmV4Key{Prefixlen: uint32(p.Bits()), Addr: beU32(p.Masked().Addr())}
		if err := a.objs.TrustedSources.Put(&key, uint8(1)); err != nil {
			return fmt.Errorf("trusted prefix %v: %w", p, err)
		}
	}
	return nil
}

// beU32 is an IPv4 address as the uint32 whose memory holds it in network
// order (how C sees a __be32 on this little-endian machine).
func beU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// SyncClock tells the program what Unix time it is now: the option's change
// times are Unix seconds, the kernel's cheap clock counts from boot. The
// daemon calls it periodically so wall-clock steps are followed.
func (a *Agent) SyncClock(now time.Time) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	a.clock.store(0, uint64(now.UnixNano()-ts.Nano()))
}

// Program is the tc program, for attaching or test runs.
func (a *Agent) Program() *ebpf.Program { return a.objs.BeamerAgent }

// agentSpec is the build LoadAgent loads: a copy of the caller's, or the
// embedded one.
func agentSpec(other *ebpf.CollectionSpec) (*ebpf.CollectionSpec, error) {
	if other != nil {
		return other.Copy(), nil
	}
	return loadAgent()
}

// Collection is everything LoadAgent loaded from AgentOptions.Spec, by
// the object's names: the agent's own programs, maps and variables and
// what that build adds (nil without AgentOptions.Spec). All of it belongs
// to the Agent and is closed by Close: do not close it, nor write the maps
// the agent keeps itself.
func (a *Agent) Collection() *ebpf.Collection { return a.coll }

// Counters returns every decision counter summed over CPUs.
func (a *Agent) Counters() (map[string]uint64, error) { return a.counters.Read() }

// CounterNames lists the counters in the order the program defines them.
func (a *Agent) CounterNames() []string { return a.counters.Names() }

// NewestSeen is the newest (incarnation << 32 | generation) the agent
// remembers for the i-th VIP.
func (a *Agent) NewestSeen(i int) uint64 {
	return max(a.seen.load(uint32(2*i)), a.seen.load(uint32(2*i+1)))
}

// SetNewestSeen makes e the newest (incarnation << 32 | generation)
// remembered for the i-th VIP (tests use it to set up a case).
func (a *Agent) SetNewestSeen(i int, e uint64) {
	a.seen.store(uint32(2*i), e)
	a.seen.store(uint32(2*i+1), 0)
}

// Attach attaches the agent to the ingress of the named interface (tcx). With
// AgentOptions.PinDir the link is pinned, or a link pinned there by an
// earlier agent gets this program swapped in.
func (a *Agent) Attach(iface string) (link.Link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	l, _, err := adoptOrAttach(a.pinDir, a.objs.BeamerAgent, func() (link.Link, error) {
		return link.AttachTCX(link.TCXOptions{Program: a.objs.BeamerAgent, Attach: ebpf.AttachTCXIngress, Interface: ifi.Index})
	})
	if err != nil {
		return nil, fmt.Errorf("attaching agent to %s ingress: %w", iface, err)
	}
	return l, nil
}

// Close releases the program and maps.
func (a *Agent) Close() error {
	a.capture.close()
	if a.stopRotate != nil {
		close(a.stopRotate)
		<-a.rotateDone
	}
	if a.clock != nil {
		unix.Munmap(a.clock.mem)
	}
	if a.seen != nil {
		unix.Munmap(a.seen.mem)
	}
	if a.extra != nil {
		a.extra.Close()
	}
	return a.objs.Close()
}
