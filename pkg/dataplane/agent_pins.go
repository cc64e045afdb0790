package dataplane

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// agentStateMaps are the agent maps whose content outlives a daemon: the
// counters, the newest generation seen per VIP and the change times seen
// per bucket (without them a restarted agent would reset chained packets
// of a bucket that moved before the restart).
var agentStateMaps = []string{"agent_counters", "generation_seen", "bucket_changed"}

// A strategy's pinned state (agentspi.PinnedState, Cheetah's keys per VIP
// and key id per socket) is keyed by VIP address and by socket, not by VIP
// slot, so it is kept across any restart, also one that changes the VIPs
// or bucket counts: it is pinned in the strategy's own directory, apart
// from the layout's (a Cheetah server never sends a client a timestamp the
// mux cannot decode).

// agentPinnedMaps opens every pinned map the agent can adopt: the state of
// the same VIP layout, and the strategies' pinned state whatever the
// layout (also where an agent of an earlier version pinned it, in the
// layout's directory).
func agentPinnedMaps(pinDir string, spec *ebpf.CollectionSpec, vips []AgentVIP) map[string]*ebpf.Map {
	state := agentStateDir(pinDir, vips)
	out := pinnedMaps(state, spec, agentStateMaps)
	if pinDir == "" {
		return out
	}
	for dir, names := range strategyPinnedState() {
		for name, m := range pinnedMaps(filepath.Join(pinDir, dir), spec, names) {
			out[name] = m
		}
		for name, m := range pinnedMaps(state, spec, names) {
			if out[name] == nil {
				out[name] = m
			} else {
				m.Close()
			}
		}
	}
	return out
}

// agentStateDir is the pin directory of the state maps. Their entries are
// indexed by VIP slot and bucket base, so they are only meaningful to an
// agent serving the same VIPs with the same bucket counts, in the same
// order: the directory is named after that layout, and an agent with
// another layout starts with empty state.
func agentStateDir(pinDir string, vips []AgentVIP) string {
	if pinDir == "" {
		return ""
	}
	h := fnv.New64a()
	for _, v := range vips {
		fmt.Fprintf(h, "%v/%d;", v.VIP, v.Buckets)
	}
	return filepath.Join(pinDir, fmt.Sprintf("state-%016x", h.Sum64()))
}

func (a *Agent) pinState(vips []AgentVIP) error {
	if a.pinDir == "" {
		return nil
	}
	dir := agentStateDir(a.pinDir, vips)
	// State of another layout is of no use to anyone now.
	old, _ := filepath.Glob(filepath.Join(a.pinDir, "state-*"))
	for _, o := range old {
		if o != dir {
			os.RemoveAll(o)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin directory: %w", err)
	}
	// The capture maps, for `beamer agent capture` (capture.go).
	if err := pinCapture(a.pinDir, a.capture.Section, a.objs.CaptureCfg, a.objs.CaptureRing); err != nil {
		return err
	}
	if err := pinMaps(dir, map[string]*ebpf.Map{
		"agent_counters": a.objs.AgentCounters, "generation_seen": a.objs.GenerationSeen, "bucket_changed": a.objs.BucketChanged,
	}); err != nil {
		return err
	}
	for sub, names := range strategyPinnedState() {
		sdir := filepath.Join(a.pinDir, sub)
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return fmt.Errorf("pin directory: %w", err)
		}
		maps := map[string]*ebpf.Map{}
		for _, name := range names {
			m, err := a.Map(name)
			if err != nil {
				return err
			}
			maps[name] = m
		}
		if err := pinMaps(sdir, maps); err != nil {
			return err
		}
		for _, name := range names {
			os.Remove(filepath.Join(dir, name)) // where an earlier version pinned them
		}
	}
	return nil
}

// PinDir is where the agent is pinned, "" when it is not.
func (a *Agent) PinDir() string { return a.pinDir }
