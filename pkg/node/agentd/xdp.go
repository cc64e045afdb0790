package agentd

import (
	"fmt"
	"log/slog"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// The XDP fast path (bpf/agent.c beamer_agent_xdp) decapsulates the common case
// before the kernel builds a socket buffer; the tc program stays attached
// and decides everything else. It needs a NIC whose driver runs XDP.
const (
	XDPAuto   = "auto"   // native XDP where the driver supports it, else tc alone (logged)
	XDPNative = "native" // native XDP or fail to start
	XDPOff    = "off"    // tc alone
)

// ValidXDP checks an Options.XDP value.
func ValidXDP(mode string) error {
	switch mode {
	case "", XDPAuto, XDPNative, XDPOff:
		return nil
	}
	return fmt.Errorf("xdp mode %q: want %s, %s or %s", mode, XDPAuto, XDPNative, XDPOff)
}

func (d *Daemon) startXDP() error {
	mode := d.opts.XDP
	if err := ValidXDP(mode); err != nil {
		return err
	}
	if mode == XDPOff {
		return nil
	}
	l, err := d.agent.AttachXDP(d.cfg.Interface, dataplane.XDPDriver)
	if err != nil {
		if mode == XDPNative {
			return err
		}
		slog.Info("no native XDP on the interface: the tc program decapsulates every packet", "interface", d.cfg.Interface, "reason", err)
		return nil
	}
	d.xdp = l
	slog.Info("XDP fast path attached in front of the tc program", "interface", d.cfg.Interface)
	return nil
}

// XDPAttached says whether the XDP fast path runs.
func (d *Daemon) XDPAttached() bool { return d.xdp != nil }
