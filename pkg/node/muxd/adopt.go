package muxd

import (
	"slices"
)

// Taking over from a predecessor's pinned program (hitless restart). The
// pinned program forwards with the dead mux's last tables; this mux's
// program must not replace it before it holds every instance it will
// forward, or VIP packets of a missing instance would reach the kernel
// (and loop between router and mux). A store-mode mux may load an
// instance long after start (store unreachable, ring being repaired), so
// the swap waits for the instances named by Expect.

// takeover is what the swap waits for.
type takeover struct {
	expected []string // instances to hold before taking over
	wanted   bool     // Ready was called
}

// Expect names instances the mux must hold before it replaces a
// predecessor's pinned program (call before Ready).
func (d *Daemon) Expect(names ...string) {
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	d.takeover.expected = append(d.takeover.expected, names...)
}

// Ready says the mux has set up what it could: it attaches (swapping its
// program into a predecessor's pinned link) now if every expected instance
// is loaded, else as soon as the last of them is (SetInstance). Without a
// predecessor Start attached already and Ready does nothing.
func (d *Daemon) Ready() error {
	d.attachMu.Lock()
	d.takeover.wanted = true
	d.attachMu.Unlock()
	return d.takeOverIfReady()
}

// takeOverIfReady swaps this mux's program in once Ready was called and
// every expected instance is loaded.
func (d *Daemon) takeOverIfReady() error {
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	if d.link != nil || !d.takeover.wanted {
		return nil
	}
	d.mu.Lock()
	var missing []string
	for _, n := range d.takeover.expected {
		if _, ok := d.instances[n]; !ok && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	d.mu.Unlock()
	if len(missing) > 0 {
		d.opts.Log.Info("keeping the previous mux's pinned program forwarding until these instances load", "instances", missing)
		return nil
	}
	if err := d.attachLocked(); err != nil {
		d.opts.Log.Error("taking over the pinned program", "error", err)
		return err
	}
	d.opts.Log.Info("took over from the previous mux's pinned program")
	return nil
}

// attach attaches the mux (Start, without a predecessor).
func (d *Daemon) attach() error {
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	return d.attachLocked()
}

func (d *Daemon) attachLocked() error {
	l, err := d.mux.Attach(d.opts.Interface, d.opts.XDPMode)
	if err != nil {
		return err
	}
	d.link, d.adopting = l, false
	return nil
}
