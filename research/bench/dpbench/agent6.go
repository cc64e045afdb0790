package dpbench

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/research/netlab"
)

// The agent's IPv6 rows: the IPv4 agent bench's shape over 2001:db8::/64
// (server ::11 with the VIP and the client on loopback and one real
// connection, previous owner ::10 resolved), packets in GUE over IPv6.
var (
	agentAddr6  = netip.MustParseAddr("2001:db8::11")
	prevAddr6   = netip.MustParseAddr("2001:db8::10")
	clientAddr6 = netip.MustParseAddr("2001:db8:200::7")
)

// gue6Frame is an IPv6 TCP ACK from the client's port sport to the VIP in
// GUE over IPv6 from the mux, with private data of generation gen naming
// prev (nil: no previous owner) changed at `changed`.
func gue6Frame(sport uint16, gen uint32, changed uint32, prev []netip.Addr) []byte {
	inner := frame6(wire.Flow{Src: clientAddr6, Dst: beamerVIP6, SrcPort: sport, DstPort: 80, Proto: wire.ProtoTCP})[14:]
	priv := make([]byte, 16)
	priv[0], priv[1] = 0x9e, byte(16+16*len(prev))
	binary.BigEndian.PutUint32(priv[4:], gen)
	binary.BigEndian.PutUint32(priv[12:], changed)
	for _, a := range prev {
		b := a.As16()
		priv = append(priv, b[:]...)
	}
	f := []byte{2, 0xbe, 0xa0, 0, 0, 0x11, 2, 0xbe, 0xa0, 0, 0, 1, 0x86, 0xdd}
	ip := make([]byte, 40)
	ip[0] = 0x60
	udpLen := 12 + len(priv) + len(inner)
	binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
	ip[6], ip[7] = 17, 64
	s, d := mux6Addr.As16(), agentAddr6.As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	udp := make([]byte, 12)
	binary.BigEndian.PutUint16(udp[0:], 0xc123)
	binary.BigEndian.PutUint16(udp[2:], forwarding.DefaultGUEPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[8], udp[9] = byte(len(priv)/4), 41
	f = append(append(append(append(f, ip...), udp...), priv...), inner...)
	return f
}

// agent6Rows measures the agent's IPv6 path: the fast path (newest
// generation, nothing to chain), a local connection's packet in a moved
// bucket (socket lookup) and a stray packet chained to the previous owner.
func agent6Rows(r *rig, o Options, add func(string, int, int, trial, string) error) error {
	ns, err := r.lab.Namespace("srv6")
	if err != nil {
		return err
	}
	peer, err := r.lab.Namespace("srv6net")
	if err != nil {
		return err
	}
	for _, n := range []*netlab.Namespace{ns, peer} {
		for _, k := range []string{"all", "default"} {
			if err := n.Sysctl("net.ipv6.conf."+k+".accept_dad", "0"); err != nil {
				return err
			}
		}
	}
	if err := ns.Sysctl("net.ipv6.conf.all.forwarding", "1"); err != nil {
		return err
	}
	if err := r.lab.Veth(ns, "eth0", netip.PrefixFrom(agentAddr6, 64), peer, "eth0", netip.MustParsePrefix("2001:db8::2/64"), 0); err != nil {
		return err
	}
	for _, a := range []netip.Addr{beamerVIP6, clientAddr6} {
		if err := ns.AddAddr("lo", netip.PrefixFrom(a, 128)); err != nil {
			return err
		}
	}
	conn, err := benchConnection(ns, prevAddr6, beamerVIP6, clientAddr6)
	if err != nil {
		return fmt.Errorf("agent IPv6 bench connection: %w", err)
	}
	defer conn.Close()

	a, err := loadBenchAgent(dataplane.AgentOptions{Addr6: agentAddr6,
		Trusted:          []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")},
		VIPs:             []dataplane.AgentVIP{{VIP: beamerVIP6, Buckets: 1000, ChainWindow: 4 * time.Minute}},
		GenerationMemory: -1})
	if err != nil {
		return err
	}
	defer a.Close()
	now := time.Now()
	a.SyncClock(now)
	a.SetNewestSeen(0, 5)
	changed := uint32(now.Unix() - 10)
	ctx := skbContext(conn.ifindex)
	rows := []struct {
		name, counter, method string
		frame                 []byte
		want                  uint32
	}{
		{"agent6-local", "to_stack", "IPv6 fast path: a local connection's packet, bucket not moved: decapsulation, no socket lookup",
			gue6Frame(41000, 5, 0, nil), tcOK},
		{"agent6-local-moved", "local_socket", "IPv6: a local connection's packet in a moved bucket: socket lookup (IPv6 tuple), decapsulation",
			gue6Frame(41000, 5, changed, []netip.Addr{prevAddr6}), tcOK},
		{"agent6-chain", "chained", "IPv6: stray packet in the chaining window: GUE over IPv6 rewritten towards the previous server",
			gue6Frame(42000, 5, changed, []netip.Addr{prevAddr6}), tcRedirect},
	}
	for _, row := range rows {
		t := trial{ns: ns, prog: a.Bench6Program(), frame: row.frame, ctx: ctx, want: row.want, repeat: o.Repeat, counter: row.counter,
			read: a.Counters, single: a.Program(), packets: o.PerPacket}
		if err := add(row.name, 1, 0, t, "test run, repeat; restored after each run; "+row.method); err != nil {
			return err
		}
	}
	steady := gue6Frame(41000, 5, 0, nil)
	t := trial{ns: ns, prog: a.XDPBench6Program(), frame: steady, ctx: xdpMD{DataEnd: uint32(len(steady)), IngressIfindex: uint32(conn.ifindex)},
		want: xdpPass, repeat: o.Repeat, counter: "xdp_decap", read: a.Counters, single: a.XDPProgram(), packets: o.PerPacket}
	return add("agent-xdp-local-ipv6", 1, 0, t, "test run, repeat; restored after each run; the XDP fast path's IPv6 twin decapsulates a local connection's packet "+
		"(newest generation, nothing to chain); per packet through the XDP program's tail call")
}
