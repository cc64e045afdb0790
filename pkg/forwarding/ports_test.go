package forwarding

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

func portsInstance() Instance {
	return Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1"),
		netip.MustParseAddr("198.18.100.2")}, PortLow: 80, PortHigh: 80, Buckets: 1000}
}

// TestInstanceWithoutPortFieldsKeepsItsBehaviour: a configuration written
// before issue 17 (TCP port_low–port_high, no services, no server_ids)
// still validates and means what it meant: TCP service ports and every
// port above 1024 a server id.
func TestInstanceWithoutPortFieldsKeepsItsBehaviour(t *testing.T) {
	var in Instance
	old := `{"name":"web","strategy":"beamer","vips":["198.18.100.1"],"port_low":80,"port_high":443,"buckets":1000,"chain_window":240000000000}`
	if err := json.Unmarshal([]byte(old), &in); err != nil {
		t.Fatal(err)
	}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	p := in.PortsOf(in.VIPs[0])
	if !p.Open(TCP, 80) || !p.Open(TCP, 443) || p.Open(TCP, 444) || p.Open(UDP, 80) {
		t.Errorf("ports of an old configuration: %+v", p)
	}
	if ids := in.ServerIDs(); ids != (ServerIDRange{PortRange: PortRange{1025, 65535}}) {
		t.Errorf("server ids of an old configuration: %v", ids)
	}
	b, _ := json.Marshal(in)
	if strings.Contains(string(b), "services") || strings.Contains(string(b), "server_ids") || strings.Contains(string(b), "quic") {
		t.Errorf("an old configuration gained fields when written back: %s", b)
	}
}

func TestPortsValidation(t *testing.T) {
	vip2 := netip.MustParseAddr("198.18.100.2")
	cases := []struct {
		name string
		edit func(*Instance)
		want string // "" = valid
	}{
		{"tcp 8443 beside the default id range", func(in *Instance) {
			in.Services = []Service{{Protocol: TCP, Ports: PortList{{8443, 8443}}}}
		}, "overlap the MPTCP server-id range 1025-65535"},
		{"tcp 8443 with an id range clear of it", func(in *Instance) {
			in.Services = []Service{{Protocol: TCP, Ports: PortList{{8443, 8443}}}}
			in.ServerIDRange = &ServerIDRange{PortRange: PortRange{20000, 29999}}
		}, ""},
		{"udp in the id range is fine (subflows are tcp)", func(in *Instance) {
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{4433, 4433}}}}
		}, ""},
		{"no server ids at all", func(in *Instance) {
			in.Services = []Service{{Protocol: TCP, Ports: PortList{{1, 65535}}}}
			in.ServerIDRange = &ServerIDRange{None: true}
		}, ""},
		{"id range reaching into 1..1024", func(in *Instance) {
			in.ServerIDRange = &ServerIDRange{PortRange: PortRange{1000, 2000}}
		}, "server-id range 1000-2000"},
		{"udp only, no probe port", func(in *Instance) {
			in.PortLow, in.PortHigh = 0, 0
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{53, 53}}}}
		}, "no TCP service port for the agent health probe"},
		{"udp only, probe none", func(in *Instance) {
			in.PortLow, in.PortHigh = 0, 0
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{53, 53}}}}
			in.Health = &HealthCheck{Kind: HealthNone}
		}, ""},
		{"service on a foreign vip", func(in *Instance) {
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{53, 53}}, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.9")}}}
		}, "not one of the instance's"},
		{"sixteen ranges on one vip", func(in *Instance) {
			var l PortList
			for i := uint16(0); i < 15; i++ {
				l = append(l, PortRange{100 + 2*i, 100 + 2*i})
			}
			in.Services = []Service{{Protocol: UDP, Ports: l, VIPs: []netip.Addr{vip2}}}
		}, "16 port ranges"},
		{"quic without a udp port", func(in *Instance) {
			in.QUIC = &QUICOptions{CIDLen: 8}
		}, "no UDP service port"},
		{"quic cid too short for id and nonce", func(in *Instance) {
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{443, 443}}}}
			in.QUIC = &QUICOptions{CIDLen: 4}
		}, "cid_len 4"},
		{"quic config 7 is unroutable", func(in *Instance) {
			in.Services = []Service{{Protocol: UDP, Ports: PortList{{443, 443}}}}
			in.QUIC = &QUICOptions{CIDLen: 8, ConfigID: 7}
		}, "unroutable"},
		{"unknown echo policy", func(in *Instance) { in.ICMPEcho = "reflect" }, "icmp_echo"},
	}
	for _, c := range cases {
		in := portsInstance()
		c.edit(&in)
		err := in.Validate()
		if c.want == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestPortsJSON(t *testing.T) {
	in := portsInstance()
	in.Services = []Service{{Protocol: UDP, Ports: PortList{{53, 53}, {4000, 4100}}}}
	in.ServerIDRange = &ServerIDRange{PortRange: PortRange{20000, 29999}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ports":"53,4000-4100"`) || !strings.Contains(string(b), `"server_ids":"20000-29999"`) {
		t.Errorf("written as %s", b)
	}
	var back Instance
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.PortSummary() != in.PortSummary() {
		t.Errorf("read back %q, wrote %q", back.PortSummary(), in.PortSummary())
	}
	if err := json.Unmarshal([]byte(`{"server_ids":"none"}`), &back); err != nil || !back.ServerIDs().None {
		t.Errorf("server_ids none: %v %v", back.ServerIDs(), err)
	}
	if err := json.Unmarshal([]byte(`{"services":[{"protocol":"udp","ports":"70000"}]}`), &back); err == nil {
		t.Error("port 70000 accepted")
	}
}

func TestQUICConnID(t *testing.T) {
	q := QUICOptions{ConfigID: 2, CIDLen: 8}
	cid := q.QUICConnID(0x1234, []byte{1, 2, 3, 4, 5})
	want := []byte{2<<5 | 7, 0x12, 0x34, 1, 2, 3, 4, 5}
	if string(cid) != string(want) {
		t.Errorf("cid %x, want %x", cid, want)
	}
}
