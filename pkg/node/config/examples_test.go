package config

import (
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestExamples: the example files shipped in examples/ load and validate,
// and say what their comments say.
func TestExamples(t *testing.T) {
	m, err := LoadMux("../../../examples/mux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := m.Instances[0]
	if m.Interface != "eth0" || in.Name != "web" || in.Buckets != 6400 || in.ChainWindow != 4*time.Minute || len(in.Servers) != 3 {
		t.Errorf("mux example: %+v", m)
	}
	if err := in.Table().Validate(); err != nil {
		t.Errorf("mux example table: %v", err)
	}
	a, err := LoadAgent("../../../examples/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.ServerID != 1025 || len(a.VIPs) != 1 || a.VIPs[0].Buckets != in.Buckets || a.VIPs[0].Window() != in.ChainWindow || a.APIAddr() != "198.18.0.10:9300" {
		t.Errorf("agent example: %+v", a)
	}
}

// TestMuxStrategyDefault: a file without strategy: is a beamer instance,
// as `ctl create` assumes without --strategy.
func TestMuxStrategyDefault(t *testing.T) {
	c, err := LoadMux(write(t, `
interface: eth0
instances:
  - name: web
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 100
    servers: [{id: 1025, address: 198.18.0.10}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Instances[0]; in.Strategy != forwarding.StrategyBeamer || in.ChainWindow != forwarding.DefaultChainWindow {
		t.Errorf("defaults: strategy %q window %v", in.Strategy, in.ChainWindow)
	}
}
