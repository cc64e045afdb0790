package forwarding

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

func TestInstanceEncap(t *testing.T) {
	in := Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 100}
	if err := in.Validate(); err != nil || in.EncapOf() != EncapIPIP || in.EncapOf().Code() != 0 {
		t.Fatalf("default: %v, %s", err, in.EncapOf())
	}
	in.Encap = EncapGUE
	if err := in.Validate(); err != nil || in.GUEPortOf() != DefaultGUEPort || in.EncapOf().Code() != 1 {
		t.Fatalf("gue: %v, port %d", err, in.GUEPortOf())
	}
	in.GUEPort = 7070
	b, _ := json.Marshal(&in)
	var back Instance
	if err := json.Unmarshal(b, &back); err != nil || back.Encap != EncapGUE || back.GUEPortOf() != 7070 {
		t.Fatalf("round trip %s: %+v %v", b, back, err)
	}
	// A configuration written before GUE existed has neither field.
	if strings.Contains(string(b), `"encap"`) == false {
		t.Fatalf("encap not written: %s", b)
	}
	old, _ := json.Marshal(&Instance{Name: "x"})
	if strings.Contains(string(old), "encap") || strings.Contains(string(old), "gue_port") {
		t.Fatalf("an ipip instance writes encap fields: %s", old)
	}
	for _, c := range []struct {
		encap Encap
		port  uint16
		want  string
	}{{"vxlan", 0, `encap "vxlan" must be ipip or gue`}, {EncapIPIP, 6080, "gue_port 6080 set, but encap is ipip"}, {"", 1, "gue_port 1 set"}} {
		in.Encap, in.GUEPort = c.encap, c.port
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("encap %q port %d: %v, want %q", c.encap, c.port, err, c.want)
		}
	}
}
