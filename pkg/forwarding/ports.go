package forwarding

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Protocol is a transport protocol a service is offered on.
type Protocol string

const (
	TCP Protocol = "tcp"
	UDP Protocol = "udp"
)

// PortRange is an inclusive range of ports, Low ≤ High. It is written
// "80" or "8000-8100".
type PortRange struct {
	Low, High uint16
}

func (r PortRange) String() string {
	if r.Low == r.High {
		return strconv.Itoa(int(r.Low))
	}
	return fmt.Sprintf("%d-%d", r.Low, r.High)
}

// Contains says whether port p is in the range.
func (r PortRange) Contains(p uint16) bool { return p >= r.Low && p <= r.High }

func (r PortRange) overlaps(o PortRange) bool { return r.Low <= o.High && o.Low <= r.High }

// ParsePortRange reads "80" or "8000-8100".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	l, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	if err != nil || l == 0 {
		return PortRange{}, fmt.Errorf("port %q must be a number in 1–65535 or a range LOW-HIGH", s)
	}
	h := l
	if isRange {
		if h, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 16); err != nil || h < l {
			return PortRange{}, fmt.Errorf("port range %q must be LOW-HIGH with 1 ≤ LOW ≤ HIGH ≤ 65535", s)
		}
	}
	return PortRange{uint16(l), uint16(h)}, nil
}

// PortList is a list of port ranges, written "53,443,8000-8100".
type PortList []PortRange

func (l PortList) String() string {
	parts := make([]string, len(l))
	for i, r := range l {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ParsePortList reads "53,443,8000-8100".
func ParsePortList(s string) (PortList, error) {
	var l PortList
	for _, part := range strings.Split(s, ",") {
		r, err := ParsePortRange(part)
		if err != nil {
			return nil, err
		}
		l = append(l, r)
	}
	return l, nil
}

func (l PortList) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

func (l *PortList) UnmarshalText(b []byte) error {
	v, err := ParsePortList(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Service is a set of ports offered on one protocol, on every VIP of the
// instance or only on the VIPs listed.
type Service struct {
	Protocol Protocol `json:"protocol" yaml:"protocol"`
	Ports    PortList `json:"ports" yaml:"ports"`
	// VIPs the service is offered on; empty: every VIP of the instance.
	VIPs []netip.Addr `json:"vips,omitempty" yaml:"vips,omitempty"`
}

// DefaultServerIDs is the MPTCP server-id range of an instance that does
// not set one: every port above the historical service ports.
var DefaultServerIDs = PortRange{uint16(MinServerID), uint16(MaxServerID)}

// ServerIDRange is an instance's MPTCP server-id range: TCP packets to a
// port in it are secondary subflows sent to the server whose id is the
// port. Written "20000-29999", or "none" for no range (no MPTCP subflows).
type ServerIDRange struct {
	PortRange
	None bool
}

func (r ServerIDRange) String() string {
	if r.None {
		return "none"
	}
	return r.PortRange.String()
}

func (r ServerIDRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *ServerIDRange) UnmarshalText(b []byte) error {
	if strings.TrimSpace(string(b)) == "none" {
		*r = ServerIDRange{None: true}
		return nil
	}
	p, err := ParsePortRange(string(b))
	if err != nil {
		return fmt.Errorf("server ids: %w", err)
	}
	*r = ServerIDRange{PortRange: p}
	return nil
}

// Contains says whether id may carry MPTCP subflows of the instance.
func (r ServerIDRange) Contains(p uint16) bool { return !r.None && r.PortRange.Contains(p) }

// ServerIDs is the instance's effective server-id range.
func (in *Instance) ServerIDs() ServerIDRange {
	if in.ServerIDRange != nil {
		return *in.ServerIDRange
	}
	return ServerIDRange{PortRange: DefaultServerIDs}
}

// MaxServices bounds the port ranges one VIP may have over all protocols:
// the mux keeps up to VIPRecordRanges in the VIP record and up to this many
// in one 64-byte overflow entry.
const (
	VIPRecordRanges = 4
	MaxVIPRanges    = 15
)

// VIPPorts is what one VIP forwards: its service ranges per protocol.
type VIPPorts struct {
	TCP, UDP PortList
}

// Len is the number of ranges over both protocols.
func (p VIPPorts) Len() int { return len(p.TCP) + len(p.UDP) }

// Open says whether a packet of protocol proto to port is for a service.
func (p VIPPorts) Open(proto Protocol, port uint16) bool {
	l := p.TCP
	if proto == UDP {
		l = p.UDP
	}
	for _, r := range l {
		if r.Contains(port) {
			return true
		}
	}
	return false
}

// PortsOf returns the service ports of vip: PortLow–PortHigh (TCP, every
// VIP) when set, then every Service offered on vip, merged and sorted.
func (in *Instance) PortsOf(vip netip.Addr) VIPPorts {
	var p VIPPorts
	if in.PortLow != 0 {
		p.TCP = append(p.TCP, PortRange{in.PortLow, in.PortHigh})
	}
	for _, s := range in.Services {
		if len(s.VIPs) > 0 && !slices.Contains(s.VIPs, vip) {
			continue
		}
		if s.Protocol == UDP {
			p.UDP = append(p.UDP, s.Ports...)
		} else {
			p.TCP = append(p.TCP, s.Ports...)
		}
	}
	p.TCP, p.UDP = mergeRanges(p.TCP), mergeRanges(p.UDP)
	return p
}

// FirstTCPPort is the lowest TCP service port of the first VIP, or 0: the
// default port of health probes.
func (in *Instance) FirstTCPPort() uint16 {
	if in.PortLow != 0 {
		return in.PortLow
	}
	for _, v := range in.VIPs {
		if p := in.PortsOf(v); len(p.TCP) > 0 {
			return p.TCP[0].Low
		}
	}
	return 0
}

// PortSummary is the instance's ports for humans: "tcp 80,443 udp 443 ids
// 20000-29999", or just "80-81" for a configuration of TCP ports only with
// the default server ids (as before services existed).
func (in *Instance) PortSummary() string {
	if len(in.Services) == 0 && in.ServerIDRange == nil {
		return PortRange{in.PortLow, in.PortHigh}.String()
	}
	var parts []string
	if in.PortLow != 0 {
		parts = append(parts, "tcp "+PortRange{in.PortLow, in.PortHigh}.String())
	}
	for _, s := range in.Services {
		p := string(s.Protocol) + " " + s.Ports.String()
		if len(s.VIPs) > 0 {
			var vs []string
			for _, v := range s.VIPs {
				vs = append(vs, v.String())
			}
			p += " on " + strings.Join(vs, ",")
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ") + " ids " + in.ServerIDs().String()
}

func mergeRanges(l PortList) PortList {
	if len(l) == 0 {
		return nil
	}
	s := slices.Clone(l)
	slices.SortFunc(s, func(a, b PortRange) int { return int(a.Low) - int(b.Low) })
	out := PortList{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if uint32(r.Low) <= uint32(last.High)+1 {
			last.High = max(last.High, r.High)
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkPorts validates PortLow/PortHigh, Services and the server-id range:
// every VIP offers something, no VIP has more than MaxVIPRanges ranges, and
// no TCP service port lies in the server-id range (a packet to it would be
// both a service's and a subflow's).
func (in *Instance) checkPorts() error {
	if in.PortLow != 0 || in.PortHigh != 0 {
		if in.PortLow == 0 || in.PortLow > in.PortHigh {
			return fmt.Errorf("service ports %d–%d must satisfy 1 ≤ low ≤ high", in.PortLow, in.PortHigh)
		}
	}
	for i, s := range in.Services {
		if s.Protocol != TCP && s.Protocol != UDP {
			return fmt.Errorf("service %d: protocol %q must be tcp or udp", i+1, s.Protocol)
		}
		if len(s.Ports) == 0 {
			return fmt.Errorf("service %d (%s): no ports", i+1, s.Protocol)
		}
		for _, r := range s.Ports {
			if r.Low == 0 || r.Low > r.High {
				return fmt.Errorf("service %d (%s): port range %v must satisfy 1 ≤ low ≤ high", i+1, s.Protocol, r)
			}
		}
		for _, v := range s.VIPs {
			if !slices.Contains(in.VIPs, v) {
				return fmt.Errorf("service %d (%s %v): VIP %v is not one of the instance's", i+1, s.Protocol, s.Ports, v)
			}
		}
	}
	if r := in.ServerIDRange; r != nil && !r.None {
		if r.Low < uint16(MinServerID) || r.Low > r.High {
			return fmt.Errorf("server-id range %v must satisfy %d ≤ low ≤ high ≤ %d (ids up to 1024 are reserved for services)", r.PortRange, MinServerID, MaxServerID)
		}
	}
	if h := in.HealthProbe(); h.Kind != HealthNone && h.Port == 0 {
		return fmt.Errorf("no TCP service port for the %s health probe: set its port (ctl create --health-port) or kind none", h.Kind)
	}
	ids := in.ServerIDs()
	for _, v := range in.VIPs {
		p := in.PortsOf(v)
		if p.Len() == 0 {
			return fmt.Errorf("VIP %v has no service port (set port_low/port_high or a service)", v)
		}
		if p.Len() > MaxVIPRanges {
			return fmt.Errorf("VIP %v has %d port ranges, at most %d fit the mux's record", v, p.Len(), MaxVIPRanges)
		}
		for _, r := range p.TCP {
			if !ids.None && r.overlaps(ids.PortRange) {
				return fmt.Errorf("TCP service ports %v of VIP %v overlap the MPTCP server-id range %v: "+
					"set server_ids (ctl create --server-ids) to a range clear of every TCP service port, e.g. %s, or \"none\"",
					r, v, ids, suggestIDs(p.TCP))
			}
		}
	}
	return nil
}

// suggestIDs proposes a server-id range of 1000 ids clear of the ports.
func suggestIDs(tcp PortList) string {
	for lo := 20000; lo+999 <= int(MaxServerID); lo += 1000 {
		r := PortRange{uint16(lo), uint16(lo + 999)}
		if !slices.ContainsFunc(tcp, r.overlaps) {
			return r.String()
		}
	}
	return "none"
}
