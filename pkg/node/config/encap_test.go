package config

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// A static mux file chooses GUE per instance; a bad encapsulation is
// refused with the words ctl uses.
func TestMuxConfigEncap(t *testing.T) {
	gue := strings.Replace(goodMux, "buckets: 100", "buckets: 100\n    encap: gue\n    gue_port: 7070", 1)
	c, err := LoadMux(write(t, gue))
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Instances[0]; in.EncapOf() != forwarding.EncapGUE || in.GUEPortOf() != 7070 {
		t.Errorf("encap %q port %d", in.Encap, in.GUEPort)
	}
	for text, want := range map[string]string{
		strings.Replace(goodMux, "buckets: 100", "buckets: 100\n    encap: geneve", 1):  `invalid instance configuration "web": encap "geneve" must be ipip or gue`,
		strings.Replace(goodMux, "buckets: 100", "buckets: 100\n    gue_port: 7070", 1): `invalid instance configuration "web": gue_port 7070 set, but encap is ipip (set encap: gue)`,
	} {
		p := write(t, text)
		if _, err := LoadMux(p); err == nil || err.Error() != p+": "+want {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

// An agent file names the GUE ports it takes besides the default.
func TestAgentConfigGUEPorts(t *testing.T) {
	agent := "interface: eth0\nserver_id: 1030\ntrusted: [198.18.0.0/24]\nvips:\n  - {vip: 198.18.100.1, buckets: 100}\n"
	c, err := LoadAgent(write(t, agent+"gue_ports: [7070, 7071]\n"))
	if err != nil || len(c.GUEPorts) != 2 || c.GUEPorts[1] != 7071 {
		t.Fatalf("%v %v", c, err)
	}
	p := write(t, agent+"gue_ports: [0]\n")
	if _, err := LoadAgent(p); err == nil || !strings.Contains(err.Error(), "gue_ports: port 0") {
		t.Errorf("port 0: %v", err)
	}
	if _, err := LoadAgent(write(t, agent+"gue_ports: [70000]\n")); err == nil {
		t.Error("port 70000 accepted")
	}
}
