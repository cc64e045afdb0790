package agentd

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/prometheus/client_golang/prometheus"
)

// The agent's traffic per VIP (bpf/vipstats.c), loaded only with
// --metrics: someone reads it. Per server is the same metric by scrape
// target; per VIP, its sum over the servers (the "mux" series: a chained
// packet is counted again where it is chained to).

func (d *Daemon) startVIPStats() error {
	ifi, err := net.InterfaceByName(d.cfg.Interface)
	if err != nil {
		return err
	}
	vips := make([]netip.Addr, 0, len(d.cfg.VIPs))
	for _, v := range d.cfg.VIPs {
		vips = append(vips, v.VIP)
	}
	d.vipStats, err = dataplane.LoadVIPStats(ifi.Index, vips)
	return err
}

// vipCollector exports the counters as beamer_agent_vip_packets_total and
// beamer_agent_vip_bytes_total, labelled with the VIP and how the packet
// came: "mux" (from a mux) or "chained" (daisy-chained by another server).
type vipCollector struct {
	s              *dataplane.VIPStats
	packets, bytes *prometheus.Desc
}

func newVIPCollector(s *dataplane.VIPStats) *vipCollector {
	return &vipCollector{s: s,
		packets: prometheus.NewDesc("beamer_agent_vip_packets_total", "Packets to the VIP this server received (since the agent started), by how they came: mux or chained (daisy-chained by another server).", []string{"vip", "via"}, nil),
		bytes:   prometheus.NewDesc("beamer_agent_vip_bytes_total", "Bytes of the clients' packets (inner IPv4 length) to the VIP this server received, by how they came.", []string{"vip", "via"}, nil)}
}

func (c *vipCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.packets; ch <- c.bytes }

func (c *vipCollector) Collect(ch chan<- prometheus.Metric) {
	t, err := c.s.Read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.packets, fmt.Errorf("per-VIP counters: %w", err))
		return
	}
	for vip, v := range t {
		a := vip.String()
		ch <- prometheus.MustNewConstMetric(c.packets, prometheus.CounterValue, float64(v.Packets), a, "mux")
		ch <- prometheus.MustNewConstMetric(c.packets, prometheus.CounterValue, float64(v.ChainedPackets), a, "chained")
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(v.Bytes), a, "mux")
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(v.ChainedBytes), a, "chained")
	}
}
