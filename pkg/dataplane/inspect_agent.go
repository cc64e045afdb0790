package dataplane

import (
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"golang.org/x/sys/unix"
)

// AgentInspection is what an agent's pinned program holds, read from its
// maps (inspect_maps.go): `beamer agent inspect`.
type AgentInspection struct {
	PinDir  string            `json:"pin_dir"`
	Program ProgramView       `json:"program"`
	VIPs    []AgentVIPInspect `json:"vips"`
	// Counters are the agent's decision counters (summed over CPUs).
	Counters Counters `json:"counters"`
	// Strategies are the built-in strategies' parts (agentspi.Inspected
	// and their counters), whose JSON fields stand beside the ones above
	// (inspect_agent_json.go): Cheetah's "cheetah", its VIPs with key
	// fingerprints, and "cheetah_counters".
	Strategies []StrategyInspection `json:"-"`
}

// StrategyInspection is one strategy's part of an AgentInspection.
type StrategyInspection struct {
	Strategy forwarding.Strategy
	agentspi.Inspection
	// Counters are its counter sets (agentspi.Counted), by their JSON
	// key, summed over CPUs.
	Counters map[string]Counters
}

// AgentVIPInspect is a VIP the agent serves, the newest version it has
// seen from a mux, and its chaining state: buckets whose change time it
// remembers, and of them those still inside the chaining window (whose
// stray packets it daisy-chains to their previous owner).
type AgentVIPInspect struct {
	VIP         netip.Addr `json:"vip"`
	Buckets     uint32     `json:"buckets"`
	Window      string     `json:"chain_window"`
	Incarnation uint32     `json:"incarnation"`
	Generation  uint32     `json:"generation"`
	Moved       int        `json:"buckets_moved"`
	Chaining    int        `json:"buckets_chaining"`
}

// InspectAgent reads the agent pinned at dir (its --pin-dir) at time now
// (for the chaining windows).
func InspectAgent(dir string, now time.Time) (*AgentInspection, error) {
	spec, err := loadAgent()
	if err != nil {
		return nil, err
	}
	p, err := openPinnedProgram(dir, spec, "beamer_agent")
	if err != nil {
		return nil, err
	}
	defer p.close()
	out := &AgentInspection{PinDir: dir, Program: p.prog}
	if out.Counters, err = p.counters(spec, "agent_counters", "agent_counter", "AGENT_"); err != nil {
		return nil, err
	}
	if out.VIPs, err = p.agentVIPs(now); err != nil {
		return nil, err
	}
	for _, name := range agentspi.All() {
		s, _ := agentspi.Lookup(name)
		si, err := inspectStrategy(p, spec, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		si.Strategy = name
		if len(si.Fields) > 0 || len(si.Counters) > 0 {
			out.Strategies = append(out.Strategies, si)
		}
	}
	return out, nil
}

// agentVIPs reads both families' VIP maps with the generations seen and
// the change times of each VIP's buckets.
func (p *pinnedProgram) agentVIPs(now time.Time) ([]AgentVIPInspect, error) {
	vips, err := p.mapNamed("agent_vips", false)
	if err != nil {
		return nil, err
	}
	vips6, err := p.mapNamed("agent_vips6", true)
	if err != nil {
		return nil, err
	}
	seenMap, err := p.mapNamed("generation_seen", false)
	if err != nil {
		return nil, err
	}
	changed, err := p.mapNamed("bucket_changed", false)
	if err != nil {
		return nil, err
	}
	seen, err := readWords(seenMap)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(seen.mem)
	var times []uint32 // bucket_changed, read once: one lookup per bucket would be slow
	for i := range changed.MaxEntries() {
		var v uint32
		if err := changed.Lookup(i, &v); err != nil {
			return nil, fmt.Errorf("bucket_changed %d: %w", i, err)
		}
		times = append(times, v)
	}
	var out []AgentVIPInspect
	add := func(vip netip.Addr, rec agentAgentVip) error {
		if uint64(2*rec.Slot+1) >= uint64(seen.n) {
			return fmt.Errorf("VIP %v names generation slot %d of %d", vip, rec.Slot, seen.n/2)
		}
		e := max(seen.load(2*rec.Slot), seen.load(2*rec.Slot+1)) // as Agent.NewestSeen
		v := AgentVIPInspect{VIP: vip, Buckets: rec.Buckets, Window: (time.Duration(rec.Window) * time.Second).String(),
			Incarnation: uint32(e >> 32), Generation: uint32(e)}
		end := uint64(rec.BucketBase) + uint64(rec.Buckets)
		if end > uint64(len(times)) {
			return fmt.Errorf("VIP %v names buckets %d–%d of %d", vip, rec.BucketBase, end, len(times))
		}
		for _, c := range times[rec.BucketBase:end] {
			if c == 0 {
				continue
			}
			v.Moved++
			if int64(c)+int64(rec.Window) > now.Unix() {
				v.Chaining++
			}
		}
		out = append(out, v)
		return nil
	}
	var k4 [4]byte
	var rec agentAgentVip
	it := vips.Iterate()
	for it.Next(&k4, &rec) {
		if err := add(netip.AddrFrom4(k4), rec); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading agent_vips: %w", err)
	}
	if vips6 != nil {
		var k16 [16]byte
		it := vips6.Iterate()
		for it.Next(&k16, &rec) {
			if err := add(netip.AddrFrom16(k16), rec); err != nil {
				return nil, err
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("reading agent_vips6: %w", err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VIP.Less(out[j].VIP) })
	return out, nil
}
