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
// of a bucket that moved before the restart), and Cheetah's keys per VIP
// and key id per socket (a restarted agent writes cookies at once, with
// the key id each connection started with).
var agentStateMaps = []string{"agent_counters", "generation_seen", "bucket_changed", "cheetah_vips", "cheetah_kid"}

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
	return pinMaps(dir, map[string]*ebpf.Map{
		"agent_counters": a.objs.AgentCounters, "generation_seen": a.objs.GenerationSeen, "bucket_changed": a.objs.BucketChanged,
		"cheetah_vips": a.objs.CheetahVips, "cheetah_kid": a.objs.CheetahKid,
	})
}

// PinDir is where the agent is pinned, "" when it is not.
func (a *Agent) PinDir() string { return a.pinDir }
