package forwarding

import "fmt"

// Encap is how muxes encapsulate an instance's packets towards its servers
// (docs/wire-format.md, "Encapsulation" and "GUE").
type Encap string

const (
	// EncapIPIP (the default, "") is IPv4-in-IPv4 with the Beamer IP
	// option: what every instance used before GUE existed.
	EncapIPIP Encap = "ipip"
	// EncapGUE is Generic UDP Encapsulation (draft-ietf-intarea-gue,
	// version 0) to the instance's GUE port, the option's bytes as GUE
	// private data: no IP option for routers to punt, and the UDP source
	// port (from the flow hash) gives ECMP and RSS their entropy. The only
	// encapsulation over IPv6.
	EncapGUE Encap = "gue"
)

// DefaultGUEPort is the UDP destination port of GUE when the instance
// names none. GUE has no IANA-assigned port; 6080 is in the registered
// range, outside Linux's ephemeral range (32768–60999, so never a client
// socket's port on a server), and beside Geneve's 6081.
const DefaultGUEPort uint16 = 6080

// EncapOf is the instance's encapsulation, the default when unset.
func (in *Instance) EncapOf() Encap {
	if in.Encap == "" {
		return EncapIPIP
	}
	return in.Encap
}

// GUEPortOf is the instance's GUE destination port, the default when
// unset (meaningful for EncapGUE only).
func (in *Instance) GUEPortOf() uint16 {
	if in.GUEPort == 0 {
		return DefaultGUEPort
	}
	return in.GUEPort
}

// EncapCode is the encapsulation's value in the mux's VIP record
// (bpf/include/gue.h ENCAP_*).
func (e Encap) Code() uint8 {
	if e == EncapGUE {
		return 1
	}
	return 0
}

// checkEncap: a known encapsulation, and a port only with GUE. (That an
// IPv6 instance needs GUE is the family rule's, family.go.)
func (in *Instance) checkEncap() error {
	switch in.Encap {
	case "", EncapIPIP, EncapGUE:
	default:
		return fmt.Errorf("encap %q must be ipip or gue", in.Encap)
	}
	if in.GUEPort != 0 && in.EncapOf() != EncapGUE {
		return fmt.Errorf("gue_port %d set, but encap is %s (set encap: gue)", in.GUEPort, in.EncapOf())
	}
	return nil
}
