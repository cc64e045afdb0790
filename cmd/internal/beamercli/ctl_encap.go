package beamercli

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// encapFlags are ctl create's encapsulation options (docs/wire-format.md,
// "GUE").
type encapFlags struct {
	encap *string
	port  *uint16
}

func addEncapFlags(cmd *cobra.Command) *encapFlags {
	return &encapFlags{
		encap: cmd.Flags().String("encap", "", "how muxes encapsulate towards the servers: ipip (default: IP-in-IP with the Beamer IP option) or gue (UDP, the option as GUE private data: no IP option for routers to punt, ECMP/RSS entropy from the UDP source port)"),
		port: cmd.Flags().Uint16("gue-port", 0, fmt.Sprintf("gue: the UDP destination port (default %d; agents take %d always, other ports with their --gue-port)",
			forwarding.DefaultGUEPort, forwarding.DefaultGUEPort)),
	}
}

// apply sets the instance's encapsulation from the flags; Validate checks
// them (a port only with gue).
func (f *encapFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	in.Encap = forwarding.Encap(*f.encap)
	if cmd.Flags().Changed("gue-port") {
		if *f.port == 0 {
			return fmt.Errorf("--gue-port 0: a port is 1–65535")
		}
		in.GUEPort = *f.port
	}
	return nil
}

// encapSummary is ctl show's note of a GUE instance's encapsulation
// (nothing for IP-in-IP, the default, so that line reads as before).
func encapSummary(in *forwarding.Instance) string {
	if in.EncapOf() != forwarding.EncapGUE {
		return ""
	}
	return fmt.Sprintf(", encap gue port %d", in.GUEPortOf())
}
