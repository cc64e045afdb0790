package muxd

import (
	"strconv"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/prometheus/client_golang/prometheus"
)

// vipTraffic exports the data path's counters per VIP and per server
// (bpf/include/vip_traffic.h) and the unowned buckets of each instance,
// read at each scrape.
//
// Cardinality is bounded by the data path's limits: at most MAX_VIPS (1024)
// VIPs, each with its packet, byte and new-flow series and a drop series
// per reason seen (at most the ~20 drop reasons; a reason appears once its
// count is not 0); at most MAX_SERVER_STATS (16384) servers over all
// instances, two series each; one unowned-buckets series per instance.
type vipTraffic struct {
	mux *dataplane.Mux

	packets, bytes, newFlows, drops, serverPackets, serverBytes, unowned *prometheus.Desc
}

func newVIPTraffic(mux *dataplane.Mux) *vipTraffic {
	vip := []string{"lb_instance", "vip"}
	server := []string{"lb_instance", "server_id", "server"}
	return &vipTraffic{mux: mux,
		packets: prometheus.NewDesc("beamer_mux_vip_packets_total",
			"Packets the mux forwarded to a server, per VIP (since the VIP was published on this mux).", vip, nil),
		bytes: prometheus.NewDesc("beamer_mux_vip_bytes_total",
			"Bytes of the packets the mux forwarded, per VIP: the clients' IP packets (IPv4 total length, IPv6 payload + 40).", vip, nil),
		newFlows: prometheus.NewDesc("beamer_mux_vip_new_flows_total",
			"TCP SYNs without ACK the mux forwarded, per VIP (UDP and QUIC count none).", vip, nil),
		drops: prometheus.NewDesc("beamer_mux_vip_dropped_packets_total",
			"Packets to a VIP the mux dropped, by reason (no_owner and unknown_server: buckets without a live owner; icmp_too_big: answered with an ICMP error instead).",
			append(vip, "reason"), nil),
		serverPackets: prometheus.NewDesc("beamer_mux_server_packets_total",
			"Packets the mux forwarded to a server of an instance (all its VIPs), since the server was added with this address.", server, nil),
		serverBytes: prometheus.NewDesc("beamer_mux_server_bytes_total",
			"Bytes of the packets the mux forwarded to a server (the clients' IP packets).", server, nil),
		unowned: prometheus.NewDesc("beamer_mux_unowned_buckets",
			"Buckets of an instance whose word in the data path names no server of its table: their packets are dropped (reasons no_owner, unknown_server).",
			[]string{"lb_instance"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (v *vipTraffic) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{v.packets, v.bytes, v.newFlows, v.drops, v.serverPackets, v.serverBytes, v.unowned} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (v *vipTraffic) Collect(ch chan<- prometheus.Metric) {
	vips, servers, err := v.mux.Traffic()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(v.packets, err)
		return
	}
	for _, t := range vips {
		a := t.VIP.String()
		ch <- prometheus.MustNewConstMetric(v.packets, prometheus.CounterValue, float64(t.Packets), t.Instance, a)
		ch <- prometheus.MustNewConstMetric(v.bytes, prometheus.CounterValue, float64(t.Bytes), t.Instance, a)
		ch <- prometheus.MustNewConstMetric(v.newFlows, prometheus.CounterValue, float64(t.NewFlows), t.Instance, a)
		for reason, n := range t.Drops {
			ch <- prometheus.MustNewConstMetric(v.drops, prometheus.CounterValue, float64(n), t.Instance, a, reason)
		}
	}
	for _, s := range servers {
		id := strconv.Itoa(int(s.ID))
		ch <- prometheus.MustNewConstMetric(v.serverPackets, prometheus.CounterValue, float64(s.Packets), s.Instance, id, s.Addr.String())
		ch <- prometheus.MustNewConstMetric(v.serverBytes, prometheus.CounterValue, float64(s.Bytes), s.Instance, id, s.Addr.String())
	}
	for name, n := range v.mux.Unowned() {
		ch <- prometheus.MustNewConstMetric(v.unowned, prometheus.GaugeValue, float64(n), name)
	}
}
