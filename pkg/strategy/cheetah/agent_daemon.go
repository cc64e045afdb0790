package cheetah

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/agentd/agentdspi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/cilium/ebpf/link"
)

// agentDaemon is Cheetah's side of the agent daemon: keys at start, the
// controller's key pushes (PUT /v1/cheetah), the cookie writer's link.
type agentDaemon struct{}

func init() { agentdspi.Register(forwarding.StrategyCheetah, agentDaemon{}) }

// keyHolder is one daemon's Cheetah state. mu guards egress and vips (the
// VIPs with keys) against the API's key pushes.
type keyHolder struct {
	agent agentspi.AgentHost
	cfg   config.Agent

	mu     sync.Mutex
	egress link.Link // the cookie writer, nil without a Cheetah VIP
	vips   []netip.Addr
}

// Start gives the program the keys of every Cheetah VIP it knows and
// attaches the cookie writer to the egress of the server's interface,
// where its replies leave (direct server return). Keys come from the
// controller (PUT /v1/cheetah, take), from the configuration (hand-given,
// optional), or from the previous agent's pinned map after any restart
// (also one that changed the VIPs: the map is pinned apart from the VIP
// layout), so replies carry cookies from the first packet. The egress
// link is pinned with the ingress one: a stopped or killed agent's writer
// keeps writing until the next agent swaps its own in, so no reply leaves
// without its cookie; only `beamer agent cleanup` (or Close) detaches it
// (docs/strategy-cheetah.md, "What breaks").
func (agentDaemon) Start(h agentdspi.Host) (agentdspi.Service, error) {
	k := &keyHolder{agent: h.Agent(), cfg: h.Config()}
	svc := agentdspi.Service{
		Routes: map[string]agentapi.Route{"PUT " + agentapi.CheetahPath: k.servePush},
		Close:  k.close,
	}
	err := k.start()
	return svc, err
}

func (k *keyHolder) start() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	served := map[netip.Addr]bool{}
	for _, v := range k.cfg.VIPs {
		served[v.VIP] = true
	}
	adopted, err := VIPs(k.agent)
	if err != nil {
		return err
	}
	for _, v := range adopted {
		if !served[v.VIP] {
			if err := DeleteVIP(k.agent, v.VIP); err != nil {
				return err
			}
			continue
		}
		// Set again: this agent's id, and the count the ingress reads.
		v.ID = uint16(k.cfg.ServerID)
		if err := SetVIP(k.agent, v); err != nil {
			return err
		}
		k.vips = append(k.vips, v.VIP)
		slog.Info("cheetah keys kept from the previous agent: cookies from the first packet", "vip", v.VIP, "key_id", v.Keys.Current)
	}
	for _, v := range k.cfg.VIPs {
		if v.Cheetah == nil || slices.Contains(k.vips, v.VIP) {
			continue // pushed keys outlive a restart; they are newer
		}
		if err := SetVIP(k.agent, AgentVIP{VIP: v.VIP, ID: uint16(k.cfg.ServerID), Keys: *v.Cheetah}); err != nil {
			return err
		}
		k.vips = append(k.vips, v.VIP)
	}
	if len(k.vips) == 0 {
		return DropEgress(k.agent) // a predecessor's writer, with nothing left to write
	}
	k.egress, err = AttachEgress(k.agent, k.cfg.Interface)
	return err
}

// take is the handler of the keys the controller pushes: it refuses
// another server id than this agent's (the cookies would name another
// server), replaces the VIP's keys whole and attaches the cookie writer if
// it is not yet. Only VIPs configured as Cheetah's take keys: a push for
// any other is refused before anything attaches.
func (k *keyHolder) take(p agentapi.CheetahPush) error {
	if !slices.ContainsFunc(k.cfg.VIPs, func(v config.AgentVIP) bool { return v.VIP == p.VIP && v.IsCheetah() }) {
		return fmt.Errorf("%w: %v is not a cheetah VIP of this agent (agent --cheetah, or strategy: cheetah under the VIP): its replies get no cookies", agentapi.ErrNotCheetah, p.VIP)
	}
	if p.ID != uint16(k.cfg.ServerID) {
		return fmt.Errorf("keys pushed for server id %d, this agent is server %d: the controller's DIP record and the agent's --id disagree", p.ID, k.cfg.ServerID)
	}
	if k.cfg.ServerID > cookie.MaxID {
		return fmt.Errorf("server id %d does not fit a Cheetah cookie (at most %d)", k.cfg.ServerID, cookie.MaxID)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := SetVIP(k.agent, AgentVIP{VIP: p.VIP, ID: p.ID, Keys: p.Keys}); err != nil {
		return err
	}
	if !slices.Contains(k.vips, p.VIP) {
		k.vips = append(k.vips, p.VIP)
		slog.Info("cheetah keys received from the controller", "vip", p.VIP, "key_id", p.Keys.Current)
	}
	if k.egress == nil {
		l, err := AttachEgress(k.agent, k.cfg.Interface)
		if err != nil {
			return err
		}
		k.egress = l
	}
	return nil
}

// close lets go of the cookie writer's link; its pin keeps it attached
// (the daemon's unpin, on a stop, detaches it).
func (k *keyHolder) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.egress != nil {
		k.egress.Close()
		k.egress = nil
	}
}
