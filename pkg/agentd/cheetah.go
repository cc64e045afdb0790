package agentd

import "github.com/beamer-lb/beamer/pkg/dataplane"

// startCheetah gives the program the keys of every Cheetah VIP and attaches
// the cookie writer to the egress of the server's interface, where its
// replies leave (direct server return). The egress link is pinned with the
// ingress one, so a hitless restart (SIGUSR2) leaves no reply without its
// cookie; a plain stop detaches it (docs/strategy-cheetah.md, "What breaks").
func (d *Daemon) startCheetah() error {
	any := false
	for _, v := range d.cfg.VIPs {
		if v.Cheetah == nil {
			continue
		}
		any = true
		if err := d.agent.SetCheetahVIP(dataplane.CheetahVIP{VIP: v.VIP, ID: uint16(d.cfg.ServerID), Keys: *v.Cheetah}); err != nil {
			return err
		}
	}
	if !any {
		return nil
	}
	var err error
	d.egress, err = d.agent.AttachCheetahEgress(d.cfg.Interface)
	return err
}
