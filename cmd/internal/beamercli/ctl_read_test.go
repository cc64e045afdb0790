package beamercli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"go.yaml.in/yaml/v3"
)

// ctlStore starts an embedded etcd, fills it as a controller would
// (the controller's own operations, at a fixed clock, so every time in the
// output is known): instance web (beamer, 100 buckets) with DIPs 1025
// (weight 1) and 1026 (weight 3), then 1027 added and drained: buckets
// moved, so some have a history. Instance api (maglev) has no servers.
// It returns the address of the management API serving it (ctlAPI).
func ctlStore(t *testing.T) string {
	t.Helper()
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); e.Close() })
	const root = "/optest"
	clk := time.Unix(1_700_000_000, 0)
	c := controller.New(s, root, controller.Options{Now: func() time.Time { return clk }})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	web := &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}
	api := &forwarding.Instance{Name: "api", Strategy: forwarding.StrategyMaglev, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.2"), netip.MustParseAddr("198.18.100.3")},
		PortLow: 443, PortHigh: 444, Buckets: 251, ChainWindow: forwarding.DefaultChainWindow}
	for _, in := range []*forwarding.Instance{web, api} {
		if err := c.CreateInstance(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.AddDIP(ctx, "web", 1025, netip.MustParseAddr("198.18.0.10"), 1))
	must(c.AddDIP(ctx, "web", 1026, netip.MustParseAddr("198.18.0.11"), 3))
	clk = clk.Add(time.Minute)
	must(c.AddDIP(ctx, "web", 1027, netip.MustParseAddr("198.18.0.12"), 1))
	clk = clk.Add(time.Minute)
	must(c.Drain(ctx, "web", 1027, true))
	return ctlAPI(t, s, root)
}

// ctlOut runs a beamer command line and returns what it printed.
func ctlOut(t *testing.T, args ...string) string {
	t.Helper()
	var buf bytes.Buffer
	rootCmd.SetOut(&buf)
	defer rootCmd.SetOut(nil)
	if err := run(args...); err != nil {
		t.Fatalf("beamer %s: %v", strings.Join(args, " "), err)
	}
	return buf.String()
}

func TestCtlListTable(t *testing.T) {
	st := ctlStore(t)
	got := ctlOut(t, "ctl", "list", "--api", st)
	want := "controller: none (start `beamer controller`)" + `
INSTANCE  VIP                        PORTS    STRATEGY  GEN  SERVER   ADDRESS      WEIGHT  STATE           HEALTH  BUCKETS  SHARE
api       198.18.100.2,198.18.100.3  443-444  maglev    0                                                          251
                                                             -> none
web       198.18.100.1               80       beamer    4                                                          100
                                                             -> 1025  198.18.0.10  1       active          up      25       25.00%
                                                             -> 1026  198.18.0.11  3       active          up      75       75.00%
                                                             -> 1027  198.18.0.12  1       active,drained  up      0        0.00%
`
	if got != want {
		t.Errorf("ctl list:\n%s\nwant:\n%s", got, want)
	}
}

// TestCtlReadFormats: -o json and -o yaml give the same document with the
// documented field names, on list, show and lookup; a bad -o is refused.
func TestCtlReadFormats(t *testing.T) {
	st := ctlStore(t)
	for _, args := range [][]string{
		{"ctl", "list"},
		{"ctl", "show", "web"},
		{"ctl", "lookup", "web", "198.18.1.5:40002"},
		{"version"},
	} {
		var fromJSON, fromYAML any
		if args[0] != "version" {
			args = append(args, "--api", st)
		}
		js := ctlOut(t, append(args, "-o", "json")...)
		if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
			t.Fatalf("%v -o json: %v\n%s", args, err, js)
		}
		ya := ctlOut(t, append(args, "-o", "yaml")...)
		if err := yaml.Unmarshal([]byte(ya), &fromYAML); err != nil {
			t.Fatalf("%v -o yaml: %v\n%s", args, err, ya)
		}
		// YAML integers decode as int, JSON's as float64: compare re-encoded.
		a, _ := json.Marshal(fromJSON)
		b, _ := json.Marshal(fromYAML)
		if !bytes.Equal(a, b) {
			t.Errorf("%v: json and yaml differ:\n%s\n%s", args, a, b)
		}
	}
	var lv struct {
		Controller string `json:"controller"`
		Instances  []struct {
			Name    string `json:"name"`
			Servers []struct {
				ID      int     `json:"id"`
				Address string  `json:"address"`
				Health  string  `json:"health"`
				Buckets int     `json:"buckets"`
				Share   float64 `json:"share"`
				Drained bool    `json:"drained"`
			} `json:"servers"`
		} `json:"instances"`
	}
	if err := json.Unmarshal([]byte(ctlOut(t, "ctl", "list", "--api", st, "-o", "json")), &lv); err != nil {
		t.Fatal(err)
	}
	if len(lv.Instances) != 2 || lv.Instances[1].Name != "web" || len(lv.Instances[1].Servers) != 3 {
		t.Fatalf("ctl list -o json: %+v", lv)
	}
	if s := lv.Instances[1].Servers[1]; s.ID != 1026 || s.Address != "198.18.0.11" || s.Buckets != 75 || s.Share != 0.75 || s.Health != "up" {
		t.Errorf("server 1026: %+v", s)
	}
	if s := lv.Instances[1].Servers[2]; !s.Drained || s.Buckets != 0 {
		t.Errorf("server 1027: %+v", s)
	}
	if err := run("ctl", "list", "--api", st, "-o", "xml"); err == nil || err.Error() != `--output "xml": want table, json or yaml` {
		t.Errorf("-o xml: %v", err)
	}
}

// TestCtlLookup: the bucket of a flow, its owner and its history, exactly;
// a port that is no service port is refused; a server-id port has no bucket.
func TestCtlLookup(t *testing.T) {
	st := ctlStore(t)
	got := ctlOut(t, "ctl", "lookup", "web", "198.18.1.5:40002", "--api", st)
	want := `flow 198.18.1.5:40002 -> 198.18.100.1:80 tcp: hash 0xe975dd34, bucket 91 of 100 (incarnation 1700000000, generation 4)
current server: 1026 198.18.0.11
history (chain, most recent first): 1027 198.18.0.12, 1025 198.18.0.10
changed 2023-11-14T22:15:20Z, chaining window closed until 2023-11-14T22:19:20Z
`
	if got != want {
		t.Errorf("ctl lookup:\n%s\nwant:\n%s", got, want)
	}
	got = ctlOut(t, "ctl", "lookup", "web", "198.18.1.5:40005", "--api", st)
	want = `flow 198.18.1.5:40005 -> 198.18.100.1:80 tcp: hash 0x1bcd94d2, bucket 10 of 100 (incarnation 1700000000, generation 4)
current server: 1025 198.18.0.10
history: none
`
	if got != want {
		t.Errorf("ctl lookup:\n%s\nwant:\n%s", got, want)
	}
	got = ctlOut(t, "ctl", "lookup", "web", "198.18.1.5:40005", "--dport", "1026", "--api", st)
	if !strings.Contains(got, "current server: 1026 198.18.0.11\n") || !strings.Contains(got, "MPTCP secondary subflow") {
		t.Errorf("server-id port:\n%s", got)
	}
	if err := run("ctl", "lookup", "web", "198.18.1.5:40005", "--dport", "81", "--api", st); err == nil ||
		err.Error() != "port 81 is not a TCP service port of web on 198.18.100.1 (80): the mux drops it" {
		t.Errorf("closed port: %v", err)
	}
	if err := run("ctl", "lookup", "web", "198.18.1.5:40005", "--dport", "80", "--proto", "udp", "--api", st); err == nil ||
		!strings.Contains(err.Error(), "not a UDP service port of web") {
		t.Errorf("udp to a tcp-only port: %v", err)
	}
	if err := run("ctl", "lookup", "web", "198.18.1.5:40005", "--vip", "198.18.100.2", "--api", st); err == nil ||
		err.Error() != "--vip 198.18.100.2 is not a VIP of web ([198.18.100.1])" {
		t.Errorf("other VIP: %v", err)
	}
	if got := ctlOut(t, "ctl", "lookup", "api", "198.18.1.5:40005", "--vip", "198.18.100.3", "--dport", "444", "--api", st); !strings.Contains(got, "-> 198.18.100.3:444 tcp") || !strings.Contains(got, "current server: none (unowned: the mux drops it)") {
		t.Errorf("second VIP, second port:\n%s", got)
	}
	if err := run("ctl", "lookup", "web", "198.18.1.5", "--api", st); err == nil || !strings.Contains(err.Error(), "want ADDR:PORT") {
		t.Errorf("no port: %v", err)
	}
}

// TestCtlCompletion: instance names complete from the store.
func TestCtlCompletion(t *testing.T) {
	st := ctlStore(t)
	if got := ctlOut(t, "__complete", "ctl", "show", "--api", st, "w"); !strings.HasPrefix(got, "web\n:4\n") {
		t.Errorf("complete w: %q", got)
	}
	if got := ctlOut(t, "__complete", "ctl", "lookup", "--api", st, ""); !strings.HasPrefix(got, "api\nweb\n:4\n") {
		t.Errorf("complete: %q", got)
	}
	if got := ctlOut(t, "__complete", "ctl", "list", "--api", st, ""); !strings.HasPrefix(got, ":4\n") {
		t.Errorf("list takes no name: %q", got)
	}
}

// TestVersion: the version line from build info, exactly.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/beamer-lb/beamer", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "be0fdc7"}, {Key: "vcs.time", Value: "2026-11-23T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	var buf bytes.Buffer
	printVersion(&buf, buildVersion(bi))
	if want := "beamer v0.3.0 (revision be0fdc7, modified, 2026-11-23T00:00:00Z) github.com/beamer-lb/beamer, built with go1.26.8\n"; buf.String() != want {
		t.Errorf("got %q want %q", buf.String(), want)
	}
	if got := ctlOut(t, "version"); !strings.HasPrefix(got, "beamer ") || !strings.Contains(got, "built with go") {
		t.Errorf("beamer version: %q", got)
	}
}
