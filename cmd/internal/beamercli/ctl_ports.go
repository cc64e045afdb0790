package beamercli

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// portFlags are ctl create's protocol and port options (issue 17).
type portFlags struct {
	tcp, udp, serverIDs, quicPorts, echo *string
	quicCIDLen, quicConfig               *uint8
}

func addPortFlags(cmd *cobra.Command) *portFlags {
	return &portFlags{
		tcp:        cmd.Flags().String("tcp-ports", "", "more TCP service ports, e.g. 443,8443,9000-9100 (beside --ports); [VIP=]LIST to offer them on one VIP only, ';' between such groups"),
		udp:        cmd.Flags().String("udp-ports", "", "UDP service ports, e.g. 53,443; [VIP=]LIST as for --tcp-ports"),
		serverIDs:  cmd.Flags().String("server-ids", "", fmt.Sprintf("MPTCP server-id range LOW-HIGH (TCP ports naming a server; default %v), or none; must leave out every TCP service port", forwarding.DefaultServerIDs)),
		quicCIDLen: cmd.Flags().Uint8("quic-cid-len", 0, fmt.Sprintf("QUIC: route UDP packets to the QUIC ports by the server id in their connection id; the length of the servers' CIDs, %d–%d (0: off)", forwarding.QUICMinCIDLen, forwarding.QUICMaxCIDLen)),
		quicConfig: cmd.Flags().Uint8("quic-config", 0, "QUIC: config rotation id in the CIDs' first byte, 0–6"),
		quicPorts:  cmd.Flags().String("quic-ports", "", "QUIC: the UDP ports that carry QUIC, LOW[-HIGH] (default 443)"),
		echo:       cmd.Flags().String("icmp-echo", "", "echo requests to the VIPs: drop (default), answer (the mux replies) or pass (to the mux host's stack)"),
	}
}

// apply fills the instance's services, server-id range, QUIC and echo
// options from the flags.
func (f *portFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	for _, p := range []struct {
		flag  string
		proto forwarding.Protocol
	}{{"tcp-ports", forwarding.TCP}, {"udp-ports", forwarding.UDP}} {
		v, _ := cmd.Flags().GetString(p.flag)
		if v == "" {
			continue
		}
		for _, group := range strings.Split(v, ";") {
			s := forwarding.Service{Protocol: p.proto}
			list := group
			if vip, rest, ok := strings.Cut(group, "="); ok {
				a, err := netip.ParseAddr(strings.TrimSpace(vip))
				if err != nil {
					return fmt.Errorf("--%s %q: %w", p.flag, group, err)
				}
				s.VIPs, list = []netip.Addr{a}, rest
			}
			ports, err := forwarding.ParsePortList(list)
			if err != nil {
				return fmt.Errorf("--%s: %w", p.flag, err)
			}
			s.Ports = ports
			in.Services = append(in.Services, s)
		}
	}
	if *f.serverIDs != "" {
		var r forwarding.ServerIDRange
		if err := r.UnmarshalText([]byte(*f.serverIDs)); err != nil {
			return fmt.Errorf("--server-ids: %w", err)
		}
		in.ServerIDRange = &r
	}
	if *f.quicCIDLen != 0 {
		q := &forwarding.QUICOptions{CIDLen: *f.quicCIDLen, ConfigID: *f.quicConfig}
		if *f.quicPorts != "" {
			r, err := forwarding.ParsePortRange(*f.quicPorts)
			if err != nil {
				return fmt.Errorf("--quic-ports: %w", err)
			}
			q.Ports = r
		}
		in.QUIC = q
	} else if cmd.Flags().Changed("quic-config") || cmd.Flags().Changed("quic-ports") {
		return fmt.Errorf("--quic-config and --quic-ports need --quic-cid-len (QUIC routing is off without it)")
	}
	in.ICMPEcho = forwarding.EchoPolicy(*f.echo)
	return nil
}
