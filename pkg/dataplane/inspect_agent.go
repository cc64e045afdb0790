package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"

	"github.com/beamer-lb/beamer/pkg/cheetah"
	"github.com/cilium/ebpf"
)

// AgentView is what a server's agent decides with now, read from the
// kernel through its pinned link (inspect.go).
type AgentView struct {
	PinDir    string             `json:"pin_dir"`
	ProgramID uint32             `json:"program_id"`
	VIPs      []AgentVIPView     `json:"vips"`
	Trusted   []netip.Prefix     `json:"trusted_sources"` // muxes and servers it takes encapsulated packets from
	Cheetah   []AgentCheetahView `json:"cheetah,omitempty"`
	Counters  map[string]uint64  `json:"counters"` // decisions, summed over CPUs (beamer_agent_packets_total)
}

// AgentVIPView is one VIP the agent serves.
type AgentVIPView struct {
	VIP     netip.Addr `json:"vip"`
	Buckets uint32     `json:"buckets"`
	// WindowSeconds is the chaining window (0: no daisy chaining).
	WindowSeconds uint32 `json:"window_seconds"`
	// The newest (incarnation, generation) a mux's packet showed it.
	Generation  uint32 `json:"generation"`
	Incarnation uint32 `json:"incarnation"`
	// ChangedBuckets counts buckets whose change time it has seen (the
	// buckets it chains or resets by).
	ChangedBuckets int `json:"changed_buckets"`
}

// AgentCheetahView is a Cheetah VIP's cookie state, keys by fingerprint.
type AgentCheetahView struct {
	VIP        netip.Addr        `json:"vip"`
	ServerSlot uint16            `json:"server_slot"`
	Keys       []cheetah.KeyView `json:"keys"`
}

// InspectAgent reads the agent pinned in pinDir.
func InspectAgent(pinDir string) (*AgentView, error) {
	spec, err := loadAgent()
	if err != nil {
		return nil, err
	}
	p, err := openPinned(pinDir, "beamer_agent", spec)
	if err != nil {
		return nil, err
	}
	defer p.close()
	pinfo, _ := p.prog.Info()
	id, _ := pinfo.ID()
	v := &AgentView{PinDir: pinDir, ProgramID: uint32(id)}

	counters, err := p.mapNamed("agent_counters")
	if err != nil {
		return nil, err
	}
	cs, err := newCounterSet(spec, counters, "agent_counter", "AGENT_")
	if err != nil {
		return nil, err
	}
	if v.Counters, err = cs.Read(); err != nil {
		return nil, err
	}
	if v.VIPs, err = p.agentVIPs(); err != nil {
		return nil, err
	}
	if v.Trusted, err = p.trustedPrefixes(); err != nil {
		return nil, err
	}
	if v.Cheetah, err = p.agentCheetah(pinDir); err != nil {
		return nil, err
	}
	return v, nil
}

func (p *pinnedProgram) agentVIPs() ([]AgentVIPView, error) {
	seen, err := p.mapNamed("generation_seen")
	if err != nil {
		return nil, err
	}
	words, err := readWords(seen)
	if err != nil {
		return nil, fmt.Errorf("generation_seen: %w", err)
	}
	changed, err := p.mapNamed("bucket_changed")
	if err != nil {
		return nil, err
	}
	var out []AgentVIPView
	add := func(addr netip.Addr, av agentAgentVip) error {
		v := AgentVIPView{VIP: addr, Buckets: av.Buckets, WindowSeconds: av.Window}
		if i := 2*int(av.Slot) + 1; i < len(words) {
			newest := max(words[i-1], words[i])
			v.Generation, v.Incarnation = uint32(newest), uint32(newest>>32)
		}
		for b := range av.Buckets {
			var t uint32
			if err := changed.Lookup(av.BucketBase+b, &t); err != nil {
				return fmt.Errorf("bucket_changed %d of VIP %v: %w", av.BucketBase+b, addr, err)
			}
			if t != 0 {
				v.ChangedBuckets++
			}
		}
		out = append(out, v)
		return nil
	}
	vips, err := p.mapNamed("agent_vips")
	if err != nil {
		return nil, err
	}
	var k4 [4]byte
	var av agentAgentVip
	it := vips.Iterate()
	for it.Next(&k4, &av) {
		if err := add(netip.AddrFrom4(k4), av); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("agent_vips: %w", err)
	}
	vips6, err := p.optionalMap("agent_vips6")
	if err != nil {
		return nil, err
	}
	if vips6 != nil {
		var k16 [16]byte
		it := vips6.Iterate()
		for it.Next(&k16, &av) {
			if err := add(netip.AddrFrom16(k16), av); err != nil {
				return nil, err
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("agent_vips6: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b AgentVIPView) int { return a.VIP.Compare(b.VIP) })
	return out, nil
}

// trustedPrefixes lists both families' LPM tries (key: prefix length, then
// the address as the packet holds it).
func (p *pinnedProgram) trustedPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, name := range []string{"trusted_sources", "trusted_sources6"} {
		m, err := p.optionalMap(name)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		key := make([]byte, m.KeySize())
		var val uint8
		it := m.Iterate()
		for it.Next(&key, &val) {
			bits := int(binary.NativeEndian.Uint32(key))
			addr, ok := netip.AddrFromSlice(key[4:])
			if !ok {
				continue
			}
			if pfx, err := addr.Prefix(bits); err == nil {
				out = append(out, pfx)
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out, nil
}

// agentCheetah reads the Cheetah VIPs from the program, or where the
// daemon pins them (agent_pins.go) when only the egress program uses them.
func (p *pinnedProgram) agentCheetah(pinDir string) ([]AgentCheetahView, error) {
	m, err := p.optionalMap("cheetah_vips")
	if err != nil {
		return nil, err
	}
	if m == nil {
		pinned, err := ebpf.LoadPinnedMap(filepath.Join(agentCheetahDir(pinDir), "cheetah_vips"), &ebpf.LoadPinOptions{ReadOnly: true})
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("pinned cheetah_vips: %w", err)
		}
		defer pinned.Close()
		m = pinned
	}
	vips, err := cheetahVIPsOf(m)
	if err != nil {
		return nil, fmt.Errorf("cheetah_vips: %w", err)
	}
	var out []AgentCheetahView
	for _, c := range vips {
		out = append(out, AgentCheetahView{VIP: c.VIP, ServerSlot: c.ID, Keys: c.Keys.View()})
	}
	slices.SortFunc(out, func(a, b AgentCheetahView) int { return a.VIP.Compare(b.VIP) })
	return out, nil
}
