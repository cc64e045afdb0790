package dataplane

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
)

// agentFastSet is AGENT_FAST_SET of bpf/include/agent_maps.h: up to that
// many trusted IPv4 prefixes and IPv4 VIPs are also load-time constants,
// which the IPv4 paths compare with instead of the LPM trie and the hash
// map (issue 27). Both sets are fixed for the life of a loaded program
// (configure writes the maps once), so the constants cannot go stale.
const agentFastSet = 8

// agentFastSetsOff leaves both sets to the maps whatever their size: the
// tests run the vectors that way too.
var agentFastSetsOff = false

// agentXDPFastShapeOff turns off the XDP fast path's reading of its most
// common packet whole (bpf/include/agent_xdp_fast.h): the tests run the
// XDP vectors that way too, so that both ways are seen to decide alike.
var agentXDPFastShapeOff = false

// setAgentFastSets writes the constants; with more entries than
// agentFastSet the counts say so (their default) and the maps decide.
func setAgentFastSets(spec *ebpf.CollectionSpec, opts AgentOptions) error {
	if agentXDPFastShapeOff {
		if err := spec.Variables["xdp_fast_shape"].Set(uint32(0)); err != nil {
			return fmt.Errorf("xdp_fast_shape: %w", err)
		}
	}
	if agentFastSetsOff {
		return nil
	}
	var nets, masks [agentFastSet]uint32
	n := 0
	for _, p := range opts.Trusted {
		if !p.Addr().Is4() || is6(p.Addr()) {
			continue
		}
		if n == agentFastSet {
			n = agentFastSet + 1
			break
		}
		var mask [4]byte
		for i := 0; i < p.Bits(); i++ {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		nets[n], masks[n] = beU32(p.Masked().Addr()), beU32(netip.AddrFrom4(mask))
		n++
	}
	if n <= agentFastSet {
		if err := setVars(spec, map[string]any{"trusted4_count": uint32(n), "trusted4_net": nets, "trusted4_mask": masks}); err != nil {
			return err
		}
	}
	var addrs [agentFastSet]uint32
	var recs [agentFastSet]agentAgentVip
	n, base := 0, uint32(0)
	for slot, v := range opts.VIPs { // slots and bases as configure gives them
		if !is6(v.VIP) {
			if n == agentFastSet {
				return nil // the hash map decides (the count's default)
			}
			addrs[n] = beU32(v.VIP)
			recs[n] = agentAgentVip{Buckets: v.Buckets, BucketBase: base, Slot: uint32(slot), Window: uint32(v.ChainWindow / time.Second)}
			n++
		}
		base += v.Buckets
	}
	return setVars(spec, map[string]any{"vips4_count": uint32(n), "vips4_addr": addrs, "vips4_rec": recs})
}

func setVars(spec *ebpf.CollectionSpec, vals map[string]any) error {
	for name, v := range vals {
		vs := spec.Variables[name]
		if vs == nil || !vs.Constant() {
			return fmt.Errorf("agent object has no constant %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("constant %s: %w", name, err)
		}
	}
	return nil
}
