package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent configuration names the keys of a Cheetah VIP in YAML, as `ctl
// show --json` prints them; a server id a cookie cannot carry is refused.
func TestAgentCheetahKeys(t *testing.T) {
	yaml := `interface: eth0
server_id: 1030
trusted: [198.18.0.0/24]
vips:
  - vip: 198.18.100.1
    buckets: 100
    cheetah:
      current: 1
      keys: [0123456789abcdeffedcba9876543210, deadbeef0badf00d123456789e3779b9]
`
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadAgent(path)
	if err != nil {
		t.Fatal(err)
	}
	ks := c.VIPs[0].Cheetah
	if ks == nil || ks.Current != 1 || ks.Keys[1].String() != "deadbeef0badf00d123456789e3779b9" {
		t.Fatalf("keys %+v", ks)
	}
	big := strings.Replace(yaml, "server_id: 1030", "server_id: 40000", 1)
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(path); err == nil || !strings.Contains(err.Error(), "Cheetah cookie") {
		t.Fatalf("server id 40000 with cheetah keys: %v", err)
	}
	bad := strings.Replace(yaml, "deadbeef0badf00d123456789e3779b9", "xyz", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgent(path); err == nil {
		t.Fatal("a malformed key was accepted")
	}
}

// A static mux file of a Cheetah instance is checked as `ctl add-dip` is
// (forwarding.Instance.CheckServer): a server id a cookie cannot carry is
// refused there too.
func TestMuxCheetahServerID(t *testing.T) {
	yaml := strings.Replace(goodMux, "strategy: beamer", `strategy: cheetah
    cheetah:
      policy: rr
      keys:
        current: 0
        keys: [0123456789abcdeffedcba9876543210, deadbeef0badf00d123456789e3779b9]`, 1)
	if _, err := LoadMux(write(t, yaml)); err != nil {
		t.Fatal(err)
	}
	big := strings.Replace(yaml, "id: 1026", "id: 40000", 1)
	if _, err := LoadMux(write(t, big)); err == nil || !strings.Contains(err.Error(), "server 40000: server id 40000 does not fit a Cheetah cookie") {
		t.Fatalf("server id 40000 in a cheetah mux file: %v", err)
	}
}
