package dpbench

import (
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// benchQUIC is the QUIC option of the UDP rows' instance.
var benchQUIC = forwarding.QUICOptions{ConfigID: 1, CIDLen: 8, Ports: forwarding.PortRange{Low: 443, High: 443}}

// udpMuxRows measures the issue-17 paths of the Beamer mux on 1000 buckets:
// a UDP datagram by bucket (never moved, and moved once: the option then
// ends with the current owner), a QUIC short-header packet forwarded by the
// server id in its connection id, and a client's first Initial whose random
// connection id falls back to the bucket. One flow each (as the Cheetah
// rows). A baseline built before issue 17 drops UDP: its figure is then
// marked unverified (another path), not compared.
func udpMuxRows(r *rig, o Options, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	for _, moved := range []int{0, 1} {
		cfg, table := beamerInstance(1000, moved)
		cfg.Services = []forwarding.Service{{Protocol: forwarding.UDP, Ports: forwarding.PortList{{Low: 53, High: 53}, {Low: 443, High: 443}}}}
		q := benchQUIC
		cfg.QUIC = &q
		m, err := loadMux(cfg, table, 0, o)
		if err != nil {
			return err
		}
		flow := func(dport uint16) wire.Flow {
			return wire.Flow{Src: netip.MustParseAddr("198.19.0.1"), Dst: beamerVIP, SrcPort: 1024, DstPort: dport}
		}
		dns := []byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01")
		type row struct {
			name, counter, what string
			ip                  []byte
		}
		rows := []row{{"udp-moved1", "fwd_with_previous", "UDP datagram, every bucket moved once: the option names the previous owner, then the current one (RETURN)",
			wiretest.Datagram{Flow: flow(53), Payload: dns}.IPv4()}}
		if moved == 0 {
			rows = []row{
				{"udp", "fwd_bucket", "UDP datagram to a service port, bucket never moved: 16-byte option",
					wiretest.Datagram{Flow: flow(53), Payload: dns}.IPv4()},
				{"quic-cid", "fwd_quic_cid", "QUIC short header: server id read from the connection id, no bucket, no option",
					wiretest.Datagram{Flow: flow(443), Payload: wiretest.QUICShort(q.QUICConnID(1030, []byte{1, 2, 3, 4, 5}))}.IPv4()},
				{"quic-initial", "fwd_bucket", "QUIC client Initial, random connection id: not ours, by bucket",
					wiretest.Datagram{Flow: flow(443), Payload: wiretest.QUICLong(0, []byte{0x3a, 0xf1, 0x09, 0x22, 0x51, 0x6e, 0x70, 0x13})}.IPv4()},
			}
		}
		for _, row := range rows {
			f := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, row.ip)
			tr := trial{ns: r.ns, prog: m.BenchProgram(), frame: f, ctx: ctx(f), want: xdpTX, repeat: o.Repeat, counter: row.counter,
				read: m.Counters, base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(), packets: o.PerPacket}
			if err := add(row.name, 1, 1000, tr, "test run, repeat; encapsulation undone after each; "+row.what); err != nil {
				m.Close()
				return err
			}
		}
		m.Close()
	}
	return nil
}
