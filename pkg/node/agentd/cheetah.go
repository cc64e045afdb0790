package agentd

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// startCheetah gives the program the keys of every Cheetah VIP it knows
// and attaches the cookie writer to the egress of the server's interface,
// where its replies leave (direct server return). Keys come from the
// controller (PUT /v1/cheetah, takeCheetahKeys), from the configuration
// (hand-given, optional), or from the previous agent's pinned map after
// any restart (also one that changed the VIPs: the map is pinned apart
// from the VIP layout), so replies carry cookies from the first packet.
// The egress link is pinned with the ingress one: a stopped or killed
// agent's writer keeps writing until the next agent swaps its own in, so
// no reply leaves without its cookie; only `beamer agent cleanup` (or
// Close) detaches it (docs/strategy-cheetah.md, "What breaks").
func (d *Daemon) startCheetah() error {
	d.cheetahMu.Lock()
	defer d.cheetahMu.Unlock()
	served := map[netip.Addr]bool{}
	for _, v := range d.cfg.VIPs {
		served[v.VIP] = true
	}
	adopted, err := d.agent.CheetahVIPs()
	if err != nil {
		return err
	}
	for _, v := range adopted {
		if !served[v.VIP] {
			if err := d.agent.DeleteCheetahVIP(v.VIP); err != nil {
				return err
			}
			continue
		}
		// Set again: this agent's id, and the count the ingress reads.
		v.ID = uint16(d.cfg.ServerID)
		if err := d.agent.SetCheetahVIP(v); err != nil {
			return err
		}
		d.cheetahVIPs = append(d.cheetahVIPs, v.VIP)
		slog.Info("cheetah keys kept from the previous agent: cookies from the first packet", "vip", v.VIP, "key_id", v.Keys.Current)
	}
	for _, v := range d.cfg.VIPs {
		if v.Cheetah == nil || slices.Contains(d.cheetahVIPs, v.VIP) {
			continue // pushed keys outlive a restart; they are newer
		}
		if err := d.agent.SetCheetahVIP(dataplane.CheetahVIP{VIP: v.VIP, ID: uint16(d.cfg.ServerID), Keys: *v.Cheetah}); err != nil {
			return err
		}
		d.cheetahVIPs = append(d.cheetahVIPs, v.VIP)
	}
	if len(d.cheetahVIPs) == 0 {
		return d.agent.DropCheetahEgress() // a predecessor's writer, with nothing left to write
	}
	d.egress, err = d.agent.AttachCheetahEgress(d.cfg.Interface)
	return err
}

// takeCheetahKeys is the agent API's handler of the keys the controller
// pushes: it refuses another server id than this agent's (the cookies
// would name another server), replaces the VIP's keys whole and attaches
// the cookie writer if it is not yet. Only VIPs configured as Cheetah's
// take keys: a push for any other is refused before anything attaches.
func (d *Daemon) takeCheetahKeys(p agentapi.CheetahPush) error {
	if !slices.ContainsFunc(d.cfg.VIPs, func(v config.AgentVIP) bool { return v.VIP == p.VIP && v.IsCheetah() }) {
		return fmt.Errorf("%w: %v is not a cheetah VIP of this agent (agent --cheetah, or strategy: cheetah under the VIP): its replies get no cookies", agentapi.ErrNotCheetah, p.VIP)
	}
	if p.ID != uint16(d.cfg.ServerID) {
		return fmt.Errorf("keys pushed for server id %d, this agent is server %d: the controller's DIP record and the agent's --id disagree", p.ID, d.cfg.ServerID)
	}
	if d.cfg.ServerID > cookie.MaxID {
		return fmt.Errorf("server id %d does not fit a Cheetah cookie (at most %d)", d.cfg.ServerID, cookie.MaxID)
	}
	d.cheetahMu.Lock()
	defer d.cheetahMu.Unlock()
	if err := d.agent.SetCheetahVIP(dataplane.CheetahVIP{VIP: p.VIP, ID: p.ID, Keys: p.Keys}); err != nil {
		return err
	}
	if !slices.Contains(d.cheetahVIPs, p.VIP) {
		d.cheetahVIPs = append(d.cheetahVIPs, p.VIP)
		slog.Info("cheetah keys received from the controller", "vip", p.VIP, "key_id", p.Keys.Current)
	}
	if d.egress == nil {
		l, err := d.agent.AttachCheetahEgress(d.cfg.Interface)
		if err != nil {
			return err
		}
		d.egress = l
	}
	return nil
}
