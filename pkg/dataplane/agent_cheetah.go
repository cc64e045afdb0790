package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// CheetahVIP is a VIP of a Cheetah instance this server serves: its slot in
// the instance's server table and the instance's keys. The egress program
// writes the cookie naming ID into the TSval of every segment the server
// sends from the VIP, and the agent shows the stack a usable TSecr instead
// of the client's echo (bpf/strategy/cheetah_agent.h).
type CheetahVIP struct {
	VIP  netip.Addr
	ID   uint16
	Keys cookie.Keys
}

// SetCheetahVIP starts (or updates: a key rotation) the cookie for a VIP.
// The record is replaced whole, so a segment sees either the old or the new
// keys, never a mix.
func (a *Agent) SetCheetahVIP(v CheetahVIP) error {
	if !v.VIP.Is4() {
		return fmt.Errorf("cheetah VIP %v is not IPv4", v.VIP)
	}
	if v.ID == 0 || v.ID > cookie.MaxID {
		return fmt.Errorf("cheetah VIP %v: server slot %d must be in 1–%d", v.VIP, v.ID, cookie.MaxID)
	}
	if v.Keys.Current > 1 {
		return fmt.Errorf("cheetah VIP %v: key id %d must be 0 or 1", v.VIP, v.Keys.Current)
	}
	rec := agentCheetahVip{Id: v.ID, Kid: v.Keys.Current}
	for i, k := range v.Keys.Keys {
		rec.Keys[i].K = k
	}
	if err := a.objs.CheetahVips.Put(v.VIP.As4(), &rec); err != nil {
		return err
	}
	return a.countCheetahVIPs()
}

// CheetahVIPs lists the VIPs the agent writes cookies for: those set, and
// after a hitless restart those the previous agent had (the map is pinned).
func (a *Agent) CheetahVIPs() ([]CheetahVIP, error) {
	var out []CheetahVIP
	var k [4]byte
	var v agentCheetahVip
	it := a.objs.CheetahVips.Iterate()
	for it.Next(&k, &v) {
		c := CheetahVIP{VIP: netip.AddrFrom4(k), ID: v.Id, Keys: cookie.Keys{Current: v.Kid}}
		for i := range c.Keys.Keys {
			c.Keys.Keys[i] = v.Keys[i].K
		}
		out = append(out, c)
	}
	return out, it.Err()
}

// DeleteCheetahVIP stops writing cookies for a VIP.
func (a *Agent) DeleteCheetahVIP(vip netip.Addr) error {
	if err := a.objs.CheetahVips.Delete(vip.As4()); err != nil {
		return err
	}
	return a.countCheetahVIPs()
}

// countCheetahVIPs tells the ingress how many Cheetah VIPs there are (it
// skips its map lookup when there are none).
func (a *Agent) countCheetahVIPs() error {
	n := uint32(0)
	var k [4]byte
	var v agentCheetahVip
	it := a.objs.CheetahVips.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	return a.objs.CheetahVipsInUse.Set(n)
}

// CheetahEgress is the tc egress program (for attaching or test runs).
func (a *Agent) CheetahEgress() *ebpf.Program { return a.objs.CheetahEgress }

// AttachCheetahEgress attaches the cookie writer to the egress of iface,
// the interface the server's replies leave by (tcx). With
// AgentOptions.PinDir the link is pinned in its cheetah-egress
// subdirectory, or a link pinned there by an earlier agent gets this
// program swapped in, so replies never leave without their cookie across a
// hitless restart (the key ids pinned on sockets start afresh: see the doc).
func (a *Agent) AttachCheetahEgress(iface string) (link.Link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	dir := ""
	if a.pinDir != "" {
		dir = filepath.Join(a.pinDir, "cheetah-egress")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	l, _, err := adoptOrAttach(dir, a.objs.CheetahEgress, func() (link.Link, error) {
		return link.AttachTCX(link.TCXOptions{Program: a.objs.CheetahEgress, Attach: ebpf.AttachTCXEgress, Interface: ifi.Index})
	})
	if err != nil {
		return nil, fmt.Errorf("attaching cheetah egress to %s: %w", iface, err)
	}
	return l, nil
}

// DropCheetahEgress detaches a cookie writer an earlier agent left pinned
// (an agent that serves no Cheetah VIP any more). Without pinning, or
// without such a writer, it does nothing.
func (a *Agent) DropCheetahEgress() error {
	if a.pinDir == "" {
		return nil
	}
	return DetachPinned(filepath.Join(a.pinDir, "cheetah-egress"))
}

// CheetahCounters returns the cookie writer's and restorer's counters
// summed over CPUs.
func (a *Agent) CheetahCounters() (map[string]uint64, error) { return a.cheetah.Read() }
