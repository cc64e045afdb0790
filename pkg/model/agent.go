package model

import (
	"encoding/binary"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// Socket is what a socket lookup finds for a packet's 4-tuple.
type Socket int

const (
	NoSocket   Socket = iota
	Listener          // a listening socket on the service port
	Connection        // an established (or otherwise non-listening) socket
)

// AgentVIP is one VIP the agent serves.
type AgentVIP struct {
	Buckets uint32
	Window  uint32 // seconds; 0 = no chaining
	Slot    uint32 // index of its generation counter
}

// Agent is the reference server agent (bpf/agent.c).
type Agent struct {
	Addr    netip.Addr
	VIPs    map[netip.Addr]AgentVIP
	Trusted []netip.Prefix
	// Socket looks up the local socket for client → vip.
	Socket func(client, vip netip.AddrPort) Socket
	// CookieValid says whether an ACK to a listener carries a valid SYN cookie.
	CookieValid func(inner []byte) bool
	NextHops    func(netip.Addr) NextHop
	Now         uint32               // Unix seconds
	GenSeen     map[uint32]uint32    // slot → highest generation seen
	Changed     map[[2]uint32]uint32 // (slot, bucket) → latest change time seen
}

func (a *Agent) trusted(src netip.Addr) bool {
	for _, p := range a.Trusted {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// decap is the frame as the stack gets it: Ethernet header, then what
// followed the outer header.
func decap(frame []byte, outerLen int, counter string) Result {
	out := append(append([]byte(nil), frame[:14]...), frame[14+outerLen:]...)
	return Result{Action: Pass, Counter: counter, Output: out}
}

// Process runs the agent algorithm on one Ethernet frame.
func (a *Agent) Process(frame []byte) Result {
	if len(frame) < 14+20 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 || frame[14+9] != wire.ProtoIPIP {
		return Result{Action: Pass, Counter: "pass_not_encap", Output: frame}
	}
	outer := frame[14:]
	if netip.AddrFrom4([4]byte(outer[16:20])) != a.Addr {
		return Result{Action: Pass, Counter: "pass_not_for_us", Output: frame}
	}
	if !a.trusted(netip.AddrFrom4([4]byte(outer[12:16]))) {
		return drop("drop_untrusted")
	}
	if outer[0]>>4 != 4 {
		return drop("drop_bad_header")
	}
	if binary.BigEndian.Uint16(outer[6:])&0x3fff != 0 {
		return drop("drop_fragment")
	}
	outerTot := int(binary.BigEndian.Uint16(outer[2:]))
	if outerTot > len(outer) {
		return drop("drop_truncated")
	}
	var opt *wire.Option
	outerLen := int(outer[0]&0x0f) * 4
	switch outerLen {
	case wire.OuterWithOp:
		if len(outer) < wire.OuterWithOp {
			return drop("drop_truncated")
		}
		o, err := wire.ParseOption(outer[20:36])
		if err != nil {
			return drop("drop_bad_option")
		}
		opt = &o
	case wire.OuterPlain:
	default:
		return drop("drop_bad_option")
	}
	ip := outer[outerLen:]
	if len(ip) < 20 {
		return drop("drop_truncated")
	}
	if outerTot < outerLen {
		return drop("drop_bad_header")
	}
	if c := checkIPv4Plain(ip, outerTot-outerLen); c != "" {
		if c == "drop_ip_options" {
			c = "drop_inner_options"
		}
		return drop(c)
	}
	tcp, c := tcpAfter(ip)
	if c != "" {
		return drop(c)
	}
	client := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(tcp[0:]))
	vipAP := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(tcp[2:]))
	vip, ok := a.VIPs[vipAP.Addr()]
	if !ok {
		return drop("drop_unknown_vip")
	}

	flags := tcp[13]
	syn, ack, rst := flags&0x02 != 0, flags&0x10 != 0, flags&0x04 != 0
	if syn && !ack {
		return decap(frame, outerLen, "local_syn")
	}
	if opt == nil {
		return decap(frame, outerLen, "stack_no_option")
	}

	if opt.Generation > a.GenSeen[vip.Slot] {
		a.GenSeen[vip.Slot] = opt.Generation
	}
	newest := a.GenSeen[vip.Slot]
	chainable := false
	if opt.HasPrevious() && !opt.Chained() && opt.Previous != a.Addr && vip.Window != 0 {
		f := wire.Flow{Src: client.Addr(), Dst: vipAP.Addr(), SrcPort: client.Port(), DstPort: vipAP.Port(), Proto: wire.ProtoTCP}
		key := [2]uint32{vip.Slot, f.Bucket(vip.Buckets)}
		if opt.Changed > a.Changed[key] {
			a.Changed[key] = opt.Changed
		}
		chainable = uint64(a.Now) < uint64(a.Changed[key])+uint64(vip.Window)
	}
	// Nothing to chain at the newest generation: to the stack, no lookup.
	if !chainable && opt.Generation == newest {
		return decap(frame, outerLen, "to_stack")
	}
	switch a.Socket(client, vipAP) {
	case Connection:
		return decap(frame, outerLen, "local_socket")
	case Listener:
		if ack && !syn && !rst && a.CookieValid != nil && a.CookieValid(ip) {
			return decap(frame, outerLen, "local_cookie")
		}
	}
	if chainable {
		return a.chain(frame, opt)
	}
	return drop("drop_stale_generation")
}

// chain rewrites the outer header towards the previous server.
func (a *Agent) chain(frame []byte, opt *wire.Option) Result {
	nh := a.NextHops(opt.Previous)
	if nh.Result != "tx" && nh.Result != "redirect" && nh.Result != "no_neigh" {
		return drop("drop_chain_no_route")
	}
	out := append([]byte(nil), frame...)
	h := out[14 : 14+wire.OuterWithOp]
	src, dst := a.Addr.As4(), opt.Previous.As4()
	copy(h[12:16], src[:])
	copy(h[16:20], dst[:])
	h[8] = wire.OuterTTL
	h[22] |= wire.FlagChained
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], wire.Checksum(h))
	if nh.Result != "no_neigh" {
		copy(out[0:6], nh.DstMAC)
		copy(out[6:12], nh.SrcMAC)
	}
	return Result{Action: Redirect, Counter: "chained", Output: out}
}
