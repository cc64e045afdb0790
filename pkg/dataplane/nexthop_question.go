package dataplane

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// How the resolver asks the kernel the program's question.
//
// The program calls bpf_fib_lookup as a forwarded packet's lookup: from
// the mux's own address, with the device the packet came in on as iif,
// mark 0, uid 0, protocol IPIP (IPv4) or UDP (IPv6), ports 0. Netlink's
// route query (`ip route get`) is an output lookup: iif is lo, and an
// IPv4 source must be a local address. So the resolver asks from the
// mux's address with uid 0, which evaluates the policy rules the way the
// FIB does except those that match on the incoming or outgoing device,
// the protocol or ports, or an l3mdev (VRF) master: with any of those the
// family is left to the FIB (LeftToFIBError), as is a server whose route
// is multipath (the FIB hashes each packet to a path: Resolve).
//
// Not reproduced, and not detected: the kernel's pick among several
// default routes of one table with the same metric (fib_select_default,
// by their neighbours' state: output lookups only); an IPv6 output
// lookup's preference for reachable routers among routes of the same
// metric when IPv6 forwarding is off in net.ipv6.conf.all.

// LeftToFIBError says the kernel cannot be asked the program's question
// for a server: the FIB answers for it. Cause is the same for every
// server it concerns (to log once), Detail says where.
type LeftToFIBError struct{ Cause, Detail string }

func (e *LeftToFIBError) Error() string {
	return "left to the FIB: " + e.Cause + " (" + e.Detail + ")"
}

// fibQuestion is how one family is asked.
type fibQuestion struct {
	src  net.IP // nil: asked without a source
	left *LeftToFIBError
}

var rootUID uint32 // bpf_fib_lookup's uid (sock_net_uid without a socket)

func (q *fibQuestion) options(fibMatch bool) *netlink.RouteGetOptions {
	return &netlink.RouteGetOptions{SrcAddr: q.src, UID: &rootUID, FIBMatch: fibMatch}
}

// question is how the family of v4 is asked, decided once a pass from
// the policy rules and the mux's addresses.
func (l *NextHopLookup) question(v4 bool) (*fibQuestion, error) {
	family, from := netlink.FAMILY_V6, l.q.Addr6
	if v4 {
		family, from = netlink.FAMILY_V4, l.q.Addr
	}
	q, ok := l.rules[family]
	if !ok {
		var err error
		if q, err = l.newQuestion(family, from); err != nil {
			return nil, err
		}
		l.rules[family] = q
	}
	if q.left != nil {
		return nil, q.left
	}
	return q, nil
}

func (l *NextHopLookup) newQuestion(family int, from netip.Addr) (*fibQuestion, error) {
	q := &fibQuestion{}
	if from.IsValid() {
		q.src = net.IP(from.Unmap().AsSlice())
	}
	// An output lookup refuses an IPv4 source that is not local (the
	// FIB does not care): then it is asked without one, which is the
	// same unless a rule matches on sources.
	if q.src != nil && family == netlink.FAMILY_V4 {
		local, err := l.isLocal(from)
		if err != nil {
			return nil, err
		}
		if !local {
			q.src = nil
		}
	}
	rules, err := l.nl.RuleList(family)
	if err != nil {
		return nil, fmt.Errorf("policy rules: %w", err)
	}
	for _, r := range rules {
		if cause := ruleNotAskable(r, q.src != nil); cause != "" {
			q.left = &LeftToFIBError{Cause: cause, Detail: fmt.Sprintf("rule %v, priority %d", r, r.Priority)}
			break
		}
	}
	return q, nil
}

// ruleNotAskable says why an output lookup would not evaluate rule r as
// the program's lookup does ("": it would).
func ruleNotAskable(r netlink.Rule, withSource bool) string {
	switch {
	case r.IifName != "" || r.OifName != "":
		return "a policy rule matching a device (the program's lookup has the ingress device as iif, a netlink query lo)"
	case r.IPProto != 0 || r.Sport != nil || r.Dport != nil:
		return "a policy rule matching protocol or ports"
	case r.Table == 0 && r.Goto < 0:
		// The l3mdev rule (VRF) has no table, and this library does not
		// tell it from a nop or blackhole rule: all left alone.
		return "a policy rule without a table (l3mdev, nop or a blackhole kind)"
	case r.Src != nil && !withSource:
		return "a policy rule matching sources, and the mux's address cannot be asked as one (not local)"
	}
	return ""
}

func (l *NextHopLookup) isLocal(a netip.Addr) (bool, error) {
	addrs, err := l.nl.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, fmt.Errorf("addresses: %w", err)
	}
	for _, x := range addrs {
		if b, ok := netip.AddrFromSlice(x.IP); ok && b.Unmap() == a.Unmap() {
			return true, nil
		}
	}
	return false, nil
}
