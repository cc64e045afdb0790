package dataplane

import (
	"github.com/cilium/ebpf"
)

// muxStateMaps are the mux maps whose content outlives a daemon: the
// decision counters (totals stay monotonic for scrapers across restarts),
// the Maglev connection table (its connections keep their server) and the
// flood guard's per-CPU budget. Tables are not among them: the next daemon
// loads complete ones from its store or configuration before it swaps its
// program in.
var muxStateMaps = []string{"mux_counters", "conntrack", "flood_guard"}

// adoptState pins this program's state maps for a successor (a
// predecessor's connection table was taken over before the load, when its
// layout and size allow: prepareConnTrack).
func (m *Mux) adoptState(adopted map[string]*ebpf.Map) error {
	if m.pinDir == "" {
		return nil
	}
	// The capture maps, for `beamer mux capture` (capture.go): this
	// program's, fresh (capture off), replacing a predecessor's.
	if err := pinCapture(m.pinDir, m.capture.Section, m.objs.CaptureCfg, m.objs.CaptureRing); err != nil {
		return err
	}
	return pinMaps(m.pinDir, map[string]*ebpf.Map{
		"mux_counters": m.objs.MuxCounters, "conntrack": m.objs.Conntrack, "flood_guard": m.objs.FloodGuard,
	})
}

// pinTailCalls pins the program array of the mux's IPv6 path (mux6_prog)
// beside the link, replacing a predecessor's, just before the program is
// attached or swapped in. The kernel empties a program array once no
// process or pin holds it: without the pin, the program of a daemon that
// stopped without detaching (SIGUSR2, a crash) would pass every IPv6
// packet to the kernel until the next daemon swaps its own in. (The
// predecessor's array, its pin replaced, is emptied a moment before its
// program is replaced: a few IPv6 packets at most.)
func (m *Mux) pinTailCalls() error {
	if m.pinDir == "" {
		return nil
	}
	return pinMaps(m.pinDir, map[string]*ebpf.Map{"mux6_prog": m.objs.Mux6Prog})
}

// PinDir is where the mux is pinned, "" when it is not.
func (m *Mux) PinDir() string { return m.pinDir }
