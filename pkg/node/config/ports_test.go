package config

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// A static mux configuration with the issue-17 fields: UDP and TCP
// services, a server-id range, QUIC and the echo policy, all in YAML.
const portsMux = `
interface: eth0
address: 198.18.0.1
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1, 198.18.100.2]
    port_low: 80
    port_high: 80
    services:
      - {protocol: udp, ports: "53,443"}
      - {protocol: tcp, ports: "8443,9000-9100", vips: [198.18.100.2]}
    server_ids: 20000-29999
    quic: {config_id: 1, cid_len: 8}
    icmp_echo: answer
    buckets: 100
    servers:
      - {id: 20001, address: 198.18.0.10}
`

func TestMuxConfigPorts(t *testing.T) {
	c, err := LoadMux(write(t, portsMux))
	if err != nil {
		t.Fatal(err)
	}
	in := c.Instances[0].Instance
	p := in.PortsOf(netip.MustParseAddr("198.18.100.2"))
	if !p.Open(forwarding.UDP, 443) || !p.Open(forwarding.TCP, 9050) || p.Open(forwarding.TCP, 53) {
		t.Errorf("ports of the second VIP: %+v", p)
	}
	if p := in.PortsOf(netip.MustParseAddr("198.18.100.1")); p.Open(forwarding.TCP, 8443) {
		t.Errorf("the first VIP got the second's TCP service: %+v", p)
	}
	if in.ServerIDs().Low != 20000 || in.QUIC == nil || in.QUIC.CIDLen != 8 || in.ICMPEcho != forwarding.EchoAnswer {
		t.Errorf("decoded %+v", in)
	}

	if _, err := LoadMux(write(t, strings.Replace(portsMux, "id: 20001", "id: 1025", 1))); err == nil || !strings.Contains(err.Error(), "server-id range") {
		t.Errorf("server id outside the range: %v", err)
	}
	bad := strings.Replace(portsMux, "server_ids: 20000-29999", "server_ids: 9000-9999", 1)
	if _, err := LoadMux(write(t, bad)); err == nil || !strings.Contains(err.Error(), "overlap the MPTCP server-id range") {
		t.Errorf("server ids over a TCP service: %v", err)
	}
}
