package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

func write(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodMux = `
interface: eth0
address: 198.18.0.1
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1]
    port_low: 80
    port_high: 443
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
      - {id: 1026, address: 198.18.0.11, weight: 3}
`

func TestMuxConfig(t *testing.T) {
	c, err := LoadMux(write(t, goodMux))
	if err != nil {
		t.Fatal(err)
	}
	in := c.Instances[0]
	if in.ChainWindow != forwarding.DefaultChainWindow {
		t.Errorf("default window %v", in.ChainWindow)
	}
	tab := in.Table()
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	count := map[forwarding.ServerID]int{}
	for _, b := range tab.Buckets {
		count[b.Current]++
	}
	if count[1025] != 25 || count[1026] != 75 {
		t.Errorf("buckets by weight 1:3 over 100: %v", count)
	}
}

func TestMuxConfigErrors(t *testing.T) {
	cases := map[string]string{
		"unknown key":       strings.Replace(goodMux, "address: 198.18.0.1", "adress: 198.18.0.1", 1),
		"bad address":       strings.Replace(goodMux, "address: 198.18.0.1", "address: 300.1.1.1", 1),
		"bad strategy":      strings.Replace(goodMux, "strategy: beamer", "strategy: ecmp", 1),
		"too few buckets":   strings.Replace(goodMux, "buckets: 100", "buckets: 2", 1),
		"id below range":    strings.Replace(goodMux, "id: 1025", "id: 80", 1),
		"duplicate address": strings.Replace(goodMux, "198.18.0.11", "198.18.0.10", 1),
		"port above 1024":   strings.Replace(goodMux, "port_high: 443", "port_high: 8080", 1),
		"no interface":      strings.Replace(goodMux, "interface: eth0", "", 1),
		"bad xdp mode":      goodMux + "xdp_mode: offload\n",
		"not yaml":          "{{{",
	}
	for name, text := range cases {
		if _, err := LoadMux(write(t, text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := LoadMux(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestAgentConfig(t *testing.T) {
	c, err := LoadAgent(write(t, `
interface: eth0
server_id: 1025
trusted: [198.18.0.0/24]
vips:
  - {vip: 198.18.100.1, buckets: 100}
  - {vip: 198.18.100.2, buckets: 64, chain_window: 0s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.VIPs[0].Window() != 4*time.Minute || c.VIPs[1].Window() != 0 || !Flag(c.MPTCP) {
		t.Errorf("defaults: %+v", c)
	}
	bad := []string{
		"interface: eth0\nserver_id: 99\ntrusted: [198.18.0.0/24]\nvips: [{vip: 198.18.100.1, buckets: 1}]\n",
		"interface: eth0\nserver_id: 1025\nvips: [{vip: 198.18.100.1, buckets: 1}]\n",
		"interface: eth0\nserver_id: 1025\ntrusted: [198.18.0.0/24]\nvips: [{vip: 198.18.100.1}]\n",
		"interface: eth0\nserver_id: 1025\ntrusted: [198.18.0.0/24]\nvips: [{vip: 198.18.100.1, buckets: 1, chain_window: -1s}]\n",
		"interface: eth0\nserver_id: 1025\ntrusted: [198.18.0.0/24]\nvips: [{vip: 198.18.100.1, buckets: 1}]\nmptcp: maybe\n",
	}
	for i, text := range bad {
		if _, err := LoadAgent(write(t, text)); err == nil {
			t.Errorf("bad agent config %d accepted", i)
		}
	}
}
