package dataplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// The program array of the mux's IPv6 path (mux6_prog) is pinned beside
// the link. The kernel empties a program array once no process or pin
// holds it: without the pin, the program of a daemon that stopped without
// detaching (SIGUSR2, a crash) would pass every IPv6 packet to the kernel
// until the next daemon swaps its own in. The new array is pinned under a
// name of its own before the swap (pinTailCalls) and renamed over the
// predecessor's pin after it (commitTailCalls): the predecessor's array,
// released by the rename, is emptied only once its program runs no more.
const (
	tailCallsPin     = "mux6_prog"
	tailCallsPinNext = "mux6_prog_next" // bpffs refuses names with a dot
)

func (m *Mux) pinTailCalls() error {
	if m.pinDir == "" {
		return nil
	}
	// A pin of an attempt that failed before its rename is replaced; this
	// array's own pin (a second Attach) is made afresh (Map.Pin does
	// nothing for the path it thinks it pinned, gone or renamed since).
	next := filepath.Join(m.pinDir, tailCallsPinNext)
	if err := os.Remove(next); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replacing pin %s: %w", next, err)
	}
	if err := m.objs.Mux6Prog.Unpin(); err != nil {
		return fmt.Errorf("unpinning the IPv6 path's program array: %w", err)
	}
	if err := m.objs.Mux6Prog.Pin(next); err != nil {
		return fmt.Errorf("pinning the IPv6 path's program array: %w", err)
	}
	return nil
}

// commitTailCalls moves the pin pinTailCalls made over the predecessor's
// (rename(2) replaces it in one step), once this program is attached.
func (m *Mux) commitTailCalls() error {
	if m.pinDir == "" {
		return nil
	}
	next, final := filepath.Join(m.pinDir, tailCallsPinNext), filepath.Join(m.pinDir, tailCallsPin)
	if err := os.Rename(next, final); err != nil {
		return fmt.Errorf("pinning the IPv6 path's program array: %w", err)
	}
	return nil
}

// PinDir is where the mux is pinned, "" when it is not.
func (m *Mux) PinDir() string { return m.pinDir }
