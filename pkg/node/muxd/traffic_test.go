package muxd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestVIPTrafficMetrics: the per-VIP, per-server and unowned-bucket
// metrics are served with their labels and the data path's values. Frames
// run through the daemon's own program (BPF_PROG_TEST_RUN in its
// namespace): SYNs to the service port (forwarded, or dropped while a
// server's neighbour is unresolved or in a bucket without owner) and
// packets to a closed port.
func TestVIPTrafficMetrics(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxtraf").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 0)
	vip := netip.MustParseAddr("198.18.100.1")
	in := forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 64}
	table := forwarding.NewTable(64)
	table.Generation = 1
	table.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	table.Servers[1026] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.11"), State: forwarding.Active}
	for i := range table.Buckets {
		if i%16 != 15 { // 4 buckets without owner
			table.Buckets[i].Current = forwarding.ServerID(1025 + i%2)
		}
	}
	var d *Daemon
	must(t, ns.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, Metrics: "127.0.0.1:0"})
		if err != nil {
			return err
		}
		return d.SetInstance(in, table)
	}))
	defer d.Close()
	eth0, err := ns.Netlink().LinkByName("eth0")
	must(t, err)
	run := func(ip []byte) {
		t.Helper()
		frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip)
		opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256),
			Context: struct{ Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32 }{
				DataEnd: uint32(len(frame)), IngressIfindex: uint32(eth0.Attrs().Index)}}
		must(t, ns.DoOnCPU(0, func() error { _, err := d.Mux().Program().Run(opts); return err }))
	}
	client := netip.MustParseAddr("198.18.50.7")
	for p := range 10 {
		run(wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: uint16(40000 + p), DstPort: 80, Proto: 6}, Flags: wiretest.SYN}.IPv4())
	}
	for p := range 3 {
		run(wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: uint16(40000 + p), DstPort: 81, Proto: 6}, Flags: wiretest.ACK}.IPv4())
	}
	vips, servers, err := d.Mux().Traffic()
	must(t, err)
	if len(vips) != 1 || vips[0].Drops["closed_port"] != 3 || vips[0].Packets+vips[0].Drops["no_neigh"]+vips[0].Drops["no_owner"] != 10 || vips[0].NewFlows != vips[0].Packets {
		t.Fatalf("traffic %+v: want 3 closed-port drops and 10 SYNs forwarded, waiting for a neighbour or without owner", vips)
	}
	want := []string{
		fmt.Sprintf(`beamer_mux_vip_packets_total{lb_instance="web",vip="198.18.100.1"} %d`, vips[0].Packets),
		fmt.Sprintf(`beamer_mux_vip_new_flows_total{lb_instance="web",vip="198.18.100.1"} %d`, vips[0].NewFlows),
		fmt.Sprintf(`beamer_mux_vip_bytes_total{lb_instance="web",vip="198.18.100.1"} %d`, vips[0].Bytes),
		`beamer_mux_vip_dropped_packets_total{lb_instance="web",reason="closed_port",vip="198.18.100.1"} 3`,
		`beamer_mux_unowned_buckets{lb_instance="web"} 4`,
	}
	for _, s := range servers {
		want = append(want, fmt.Sprintf(`beamer_mux_server_packets_total{lb_instance="web",server="%v",server_id="%d"} %d`, s.Addr, s.ID, s.Packets),
			fmt.Sprintf(`beamer_mux_server_bytes_total{lb_instance="web",server="%v",server_id="%d"} %d`, s.Addr, s.ID, s.Bytes))
	}
	if len(servers) != 2 {
		t.Errorf("servers %+v: want 1025 and 1026", servers)
	}
	var conn net.Conn
	must(t, ns.Do(func() (err error) { conn, err = net.Dial("tcp", d.metrics.Addr().String()); return err }))
	c := http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
	resp, err := c.Get("http://mux/metrics")
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range want {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}
