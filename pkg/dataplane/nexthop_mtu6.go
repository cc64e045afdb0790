package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// A device's IPv6 MTU (net/ipv6/conf/DEV/mtu: idev->cnf.mtu6), which
// bpf_fib_lookup answers for an IPv6 route without a locked MTU. Router
// advertisements may set it below the link MTU. netlink.Handle does not
// parse it, so it is read from RTM_GETLINK's IFLA_AF_SPEC → AF_INET6 →
// IFLA_INET6_CONF (an array of 32-bit values indexed by DEVCONF_*),
// asked through a socket of the lookup's namespace (not /proc/sys, which
// would answer for the reading thread's namespace).

// devconfMTU6 is DEVCONF_MTU6 of linux/ipv6.h (after FORWARDING and HOPLIMIT).
const devconfMTU6 = 2

// ipv6MinMTU is IPV6_MIN_MTU: the kernel answers at least this.
const ipv6MinMTU = 1280

func (l *NextHopLookup) deviceMTU6(index int) (int, error) {
	if mtu, ok := l.mtu6[index]; ok {
		return mtu, nil
	}
	mtu, err := DeviceMTU6(l.q.NS, index)
	if err != nil {
		return 0, fmt.Errorf("device %d: IPv6 MTU: %w", index, err)
	}
	l.mtu6[index] = mtu
	return mtu, nil
}

// ReadDeviceMTU6 is the IPv6 MTU of device index this pass read, if it did.
func (l *NextHopLookup) ReadDeviceMTU6(index int) (int, bool) {
	mtu, ok := l.mtu6[index]
	return mtu, ok
}

// DeviceMTU6 is the IPv6 MTU of device index in ns (netns.None(): the
// calling thread's namespace), as bpf_fib_lookup answers it.
func DeviceMTU6(ns netns.NsHandle, index int) (int, error) {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return 0, err
	}
	if len(msgs) != 1 || len(msgs[0]) < unix.SizeofIfInfomsg {
		return 0, fmt.Errorf("%d answers", len(msgs))
	}
	return parseDeviceMTU6(msgs[0][unix.SizeofIfInfomsg:])
}

// parseDeviceMTU6 finds DEVCONF_MTU6 in a link message's attributes.
func parseDeviceMTU6(b []byte) (int, error) {
	conf := b
	for _, typ := range []uint16{unix.IFLA_AF_SPEC, unix.AF_INET6, unix.IFLA_INET6_CONF} {
		var err error
		if conf, err = nestedAttr(conf, typ); err != nil {
			return 0, err
		}
		if conf == nil {
			return 0, fmt.Errorf("no IPv6 configuration (IPv6 off on the device?)")
		}
	}
	if len(conf) < 4*(devconfMTU6+1) {
		return 0, fmt.Errorf("IFLA_INET6_CONF of %d bytes", len(conf))
	}
	return max(int(int32(binary.NativeEndian.Uint32(conf[4*devconfMTU6:]))), ipv6MinMTU), nil
}

// nestedAttr is the value of the first attribute of type typ in b, nil
// when there is none.
func nestedAttr(b []byte, typ uint16) ([]byte, error) {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return nil, err
	}
	for _, a := range attrs {
		if a.Attr.Type&nl.NLA_TYPE_MASK == typ {
			return a.Value, nil
		}
	}
	return nil, nil
}
