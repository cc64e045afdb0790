package agentapi

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// liveStates are the TCP states whose peer may still send packets the
// server must receive: the connection breaks if they go elsewhere. LISTEN
// holds no connection; TIME_WAIT only answers a lost final ACK, and the
// peer has closed already.
var liveStates = map[uint8]bool{
	1:  true, // ESTABLISHED
	3:  true, // SYN_RECV
	4:  true, // FIN_WAIT1
	5:  true, // FIN_WAIT2
	8:  true, // CLOSE_WAIT
	9:  true, // LAST_ACK
	11: true, // CLOSING
}

// errDumpInterrupted: the socket table changed during every dump attempt.
var errDumpInterrupted = errors.New("socket table changed during the dump; try again")

// countConnections reads the TCP sockets of the namespace ns (sock_diag)
// and counts, per bucket of a table of n buckets, the live connections
// whose local address is vip. The bucket is the mux's: the flow hash of the
// client → VIP 5-tuple (pkg/wire).
func countConnections(ns netns.NsHandle, vip netip.Addr, n uint32) (*ConnectionsReport, error) {
	family := uint8(unix.AF_INET)
	if vip.Is6() {
		family = unix.AF_INET6
	}
	socks, err := dumpTCP(ns, family)
	if err != nil {
		return nil, err
	}
	counts := map[uint32]uint32{}
	r := &ConnectionsReport{VIP: vip, Buckets: n}
	for _, s := range socks {
		if !liveStates[s.State] {
			continue
		}
		local, ok1 := netip.AddrFromSlice(s.ID.Source)
		client, ok2 := netip.AddrFromSlice(s.ID.Destination)
		if !ok1 || !ok2 || local.Unmap() != vip {
			continue
		}
		f := wire.Flow{Src: client.Unmap(), Dst: vip, SrcPort: s.ID.DestinationPort, DstPort: s.ID.SourcePort, Proto: unix.IPPROTO_TCP}
		counts[f.Bucket(n)]++
		r.Total++
	}
	r.Counts = make([]BucketCount, 0, len(counts))
	for b, c := range counts {
		r.Counts = append(r.Counts, BucketCount{Bucket: b, Count: c})
	}
	slices.SortFunc(r.Counts, func(a, b BucketCount) int { return int(a.Bucket) - int(b.Bucket) })
	return r, nil
}

// dumpTCP lists the TCP sockets of one family (AF_INET, AF_INET6: an IPv6
// VIP's connections are on AF_INET6 sockets) of the namespace ns (the current one
// when ns is not open) through sock_diag, whole or not at all: a partial
// dump could miss connections and let the controller drop a bucket that
// still holds some, so an interrupted dump is retried, then refused.
func dumpTCP(ns netns.NsHandle, family uint8) ([]*netlink.Socket, error) {
	var h *netlink.Handle
	var err error
	if ns.IsOpen() {
		h, err = netlink.NewHandleAt(ns, unix.NETLINK_INET_DIAG)
	} else {
		h, err = netlink.NewHandle(unix.NETLINK_INET_DIAG)
	}
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer h.Close()
	for attempt := 0; ; attempt++ {
		socks, err := h.SocketDiagTCP(family)
		if err == nil {
			return socks, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		if attempt == 4 {
			return nil, errDumpInterrupted
		}
	}
}
