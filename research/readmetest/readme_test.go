package readmetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

const section = "Running it"

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeBlocks checks the section parses into blocks for known hosts
// (no root needed): the multi-host test below runs them.
func TestReadmeBlocks(t *testing.T) {
	blocks, err := SectionBlocks(readme(t), section)
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"client", "router"}
	for _, h := range lanHosts {
		known = append(known, h.name)
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, h := range b.Hosts {
			if !slices.Contains(known, h) {
				t.Errorf("README line %d: host %q is not one of %v", b.Line, h, known)
			}
			seen[h] = true
		}
	}
	for _, h := range known {
		if !seen[h] {
			t.Errorf("no block runs on %s", h)
		}
	}
	// A block without its "# on HOST" line is refused, so none is skipped.
	if _, err := SectionBlocks("## Running it\n\n```sh\nbeamer version\n```\n", section); err == nil {
		t.Error("a block naming no host was accepted")
	}
}

// TestReadmeMultiHost runs the README's "Running it" on the hosts it
// describes (network namespaces), command for command, then checks what a
// newcomer would: the VIP answers from the client, through both muxes and
// both servers, with full-size packets too (the mux's ICMP "fragmentation
// needed" at the default MTU), and the operator's commands show it.
func TestReadmeMultiHost(t *testing.T) {
	netlabtest.RequireRoot(t)
	for _, bin := range []string{"/usr/lib/frr/bgpd", "/usr/lib/frr/zebra", "/usr/bin/vtysh"} {
		netlabtest.RequireFile(t, bin, "the README's router runs FRR (apt-get install frr)")
	}
	blocks, err := SectionBlocks(readme(t), section)
	if err != nil {
		t.Fatal(err)
	}
	dir := workDir(t)
	nss := buildNetwork(t, netlabtest.NewRig(t, "rdme"))

	// Each host's own setup, before the README: the controller's state
	// directory and the router's FRR (installed and running, as the
	// README's router block assumes) live in the host's mount namespace.
	pre := map[string]string{
		"controller": "mkdir -p /var/lib/beamer && mount -t tmpfs -o mode=0700 tmpfs /var/lib/beamer",
		"server1":    "mount -t tmpfs tmpfs /srv",
		"server2":    "mount -t tmpfs tmpfs /srv",
		"router": strings.Join([]string{
			"mount -t tmpfs -o mode=0755 tmpfs /run/frr && chown frr:frr /run/frr",
			"touch .readme-frr.conf && chmod 644 .readme-frr.conf",
			"/usr/lib/frr/zebra -d -u frr -g frr -f $PWD/.readme-frr.conf -i /run/frr/zebra.pid",
			"for i in $(seq 100); do [ -S /run/frr/zserv.api ] && break; sleep 0.1; done",
			"/usr/lib/frr/bgpd -d -u frr -g frr -f $PWD/.readme-frr.conf -i /run/frr/bgpd.pid",
			"for i in $(seq 100); do [ -S /run/frr/bgpd.vty ] && break; sleep 0.1; done",
		}, "\n"),
	}
	hosts := map[string]*host{}
	var order []*host
	names := []string{"controller", "router", "mux1", "mux2", "server1", "server2", "client"}
	for _, n := range names {
		h := startShell(t, n, nss[n], dir, pre[n])
		hosts[n] = h
		order = append(order, h)
	}
	t.Cleanup(func() {
		if killed := stopAll(order, 8*time.Second); len(killed) > 0 {
			t.Errorf("still running 8 s after SIGTERM (killed): %v", killed)
		}
		// The muxes gave their veth peers an XDP program, and took it
		// back when they stopped.
		for _, port := range []string{"p-mux1", "p-mux2"} {
			if l, err := nss["switch"].Netlink().LinkByName(port); err != nil {
				t.Error(err)
			} else if x := l.Attrs().Xdp; x != nil && x.Attached {
				t.Errorf("%s still has the XDP program a stopped mux attached", port)
			}
		}
		if t.Failed() || testing.Verbose() {
			for _, h := range order {
				t.Logf("---- %s ----\n%s", h.name, h.tail(""))
			}
		}
	})

	start := time.Now()
	outputs := map[string][]string{} // host -> output of each of its blocks
	for _, b := range blocks {
		for _, name := range b.Hosts {
			h := hosts[name]
			if h == nil {
				t.Fatalf("README line %d: no host %q", b.Line, name)
			}
			if name == "controller" && strings.Contains(b.Script, "ctl list") {
				// The client's curl needs one server up; the screens are
				// read, as an operator would read them, once the second
				// server's first probes (its agent may start seconds later
				// on a loaded machine) have brought it up too: at most 30 s.
				h.send(t, `for i in $(seq 60); do [ "$(bin/beamer ctl list | grep -c ' up ')" -ge 2 ] && break; sleep 0.5; done`, 60*time.Second)
			}
			out := h.send(t, b.Script, 90*time.Second) // curl retries 10 times while BGP and the first probes settle
			outputs[name] = append(outputs[name], out)
		}
	}
	t.Logf("README run in %v", time.Since(start).Round(time.Millisecond))
	for _, port := range []string{"p-mux1", "p-mux2"} {
		if l, err := nss["switch"].Netlink().LinkByName(port); err != nil {
			t.Fatal(err)
		} else if x := l.Attrs().Xdp; x == nil || !x.Attached {
			t.Errorf("the mux did not give its veth peer %s an XDP program", port)
		}
	}

	// The client's curl printed the service's page.
	clientOut := strings.Join(outputs["client"], "")
	if !strings.Contains(clientOut, "hello from server") {
		t.Errorf("the client's curl did not show the service's page:\n%s", clientOut)
	}
	checkOperatorScreens(t, strings.Join(outputs["controller"], ""), strings.Join(outputs["mux1"], ""), strings.Join(outputs["server1"], ""))

	// New connections spread over both muxes (ECMP) and both servers.
	for i := 0; i < 16; i++ {
		if _, err := nss["client"].Run("curl", "-sS", "-o", "/dev/null", "--max-time", "5", "http://"+vip.String()+"/"); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"mux1", "mux2"} {
		if c := muxCounter(t, hosts[m], "fwd_bucket"); c == 0 {
			t.Errorf("%s forwarded nothing of 17 connections (router ECMP over both muxes expected)", m)
		}
	}
	for _, s := range []string{"server1", "server2"} {
		if n := strings.Count(hosts[s].read(), `"GET / HTTP/1.1" 200`); n == 0 {
			t.Errorf("%s served none of 17 requests", s)
		}
	}
	// Each server counts the VIP's packets and bytes it received.
	for _, s := range []string{"server1", "server2"} {
		out, err := nss[s].Run("curl", "-sS", "--max-time", "5", "http://127.0.0.1:9100/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"beamer_agent_vip_packets_total", "beamer_agent_vip_bytes_total"} {
			if v := metricValue(out, m+`{via="mux",vip="198.18.100.1"}`); v <= 0 {
				t.Errorf("%s: %s = %v after its requests", s, m, v)
			}
		}
	}

	// The mux reports its BGP session with the router.
	for _, m := range []string{"mux1", "mux2"} {
		out, err := nss[m].Run("curl", "-sS", "--max-time", "5", "http://127.0.0.1:9100/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if want := `beamer_mux_bgp_session_up{peer="198.18.0.1"} 1`; !strings.Contains(out, want) {
			t.Errorf("%s metrics lack %s", m, want)
		}
	}

	// Full-size segments from the client: at MTU 1500 they do not fit
	// once encapsulated, and the mux tells the client so (ICMP); the
	// connection must go through regardless.
	fullSize(t, nss["client"])
	icmp := muxCounter(t, hosts["mux1"], "icmp_too_big") + muxCounter(t, hosts["mux2"], "icmp_too_big")
	if icmp == 0 {
		t.Error("no mux sent ICMP fragmentation-needed for the full-size segments")
	}
}

// workDir is the directory every host's shell starts in, as the README's
// hosts have bin/beamer, scripts/ and testdata/ (a checkout): the binary
// built now, the repository's scripts and sample capture.
func workDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "beamer"), "github.com/beamer-lb/beamer/cmd/beamer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, p := range []string{"scripts/store-certs.sh", "testdata/pcap/beamer-sample.pcap"} {
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkOperatorScreens checks what the README's "Seeing what runs" shows.
func checkOperatorScreens(t *testing.T, ctl, mux, agent string) {
	t.Helper()
	for _, want := range []string{
		"web", "198.18.100.1", "-> 1025  198.18.0.21", "-> 1026  198.18.0.22", "50.00%", // ctl list
		"current server:", // ctl lookup
		"4 IP-in-IP",      // decode-pcap
		"beamer ",         // version
	} {
		if !strings.Contains(ctl, want) {
			t.Errorf("the controller's screens lack %q:\n%s", want, ctl)
		}
	}
	if strings.Count(ctl, " up ") < 2 {
		t.Errorf("ctl list does not show both servers up:\n%s", ctl)
	}
	if !strings.Contains(mux, "mux on eth0 (198.18.0.11)") || !strings.Contains(mux, "-> 1025") {
		t.Errorf("mux status:\n%s", mux)
	}
	if !strings.Contains(agent, "198.18.100.1") {
		t.Errorf("agent status:\n%s", agent)
	}
}

// muxCounter reads one packet counter of a mux from `mux status -o json`.
func muxCounter(t *testing.T, h *host, name string) uint64 {
	t.Helper()
	out, err := h.ns.Command(filepath.Join(filepath.Dir(h.log), "bin", "beamer"), "mux", "status", "--metrics", "127.0.0.1:9100", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s: mux status: %v", h.name, err)
	}
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("%s: mux status -o json: %v\n%s", h.name, err, out)
	}
	return st.Counters[name]
}

// fullSize sends a 60 kB request line from the client: the server reads
// it all before it answers (404), so every full-size segment must arrive.
func fullSize(t *testing.T, client interface{ Do(func() error) error }) {
	t.Helper()
	var c net.Conn
	err := client.Do(func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp4", vip.String()+":80")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	req := fmt.Sprintf("GET /%s HTTP/1.0\r\n\r\n", strings.Repeat("a", 60000))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("sending 60 kB through the VIP: %v", err)
	}
	resp, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(resp), "HTTP/1.0 404") {
		t.Fatalf("60 kB request through the VIP: %v, answer %.80q", err, resp)
	}
}

// metricValue finds one sample in a Prometheus text exposition (-1: none).
func metricValue(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return -1
}
