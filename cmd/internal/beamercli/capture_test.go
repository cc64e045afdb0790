package beamercli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// capOtherVIP is a second VIP of the mux's instance: its packets go through
// the same programs and must stay out of a capture of arVIP.
var capOtherVIP = netip.MustParseAddr("198.18.100.2")

// TestCaptureMuxAndAgent (issue 25.5): the real `beamer mux` and `beamer
// agent` daemons forward UDP datagrams to two VIPs; `beamer mux capture`
// and `beamer agent capture`, separate processes on the daemons' pins, take
// 100 packets of one VIP each and stop by themselves: the files hold
// exactly 100 packets, half received and half sent (mux-rx/mux-tx,
// agent-rx/agent-up), none of the other VIP, read back by `beamer decode`
// and by tcpdump; the filter is off once the commands exit. A capture
// killed with SIGKILL still stops in the kernel at its count; one ended by
// SIGTERM turns the filter off.
func TestCaptureMuxAndAgent(t *testing.T) {
	r := newRestartRig(t, forwarding.StrategyBeamer, "capt")
	muxPins, muxState := netlabtest.PinDir(t, "captm"), filepath.Join(t.TempDir(), "mux-state.json")
	muxCfg := filepath.Join(t.TempDir(), "mux.yaml")
	if err := os.WriteFile(muxCfg, []byte(fmt.Sprintf(`interface: eth0
instances:
  - name: web
    strategy: beamer
    vips: [%s, %s]
    port_low: 80
    port_high: 80
    services:
      - {protocol: udp, ports: "80"}
    buckets: %d
    servers:
      - {id: 1030, address: %s}
`, arVIP, capOtherVIP, arBuckets, arServer)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Run("ip", "route", "add", capOtherVIP.String()+"/32", "via", arMux.String()); err != nil {
		t.Fatal(err)
	}
	mux := nsenterBeamer(t, r.muxNS, "mux", "--config", muxCfg, "--pin-dir", muxPins, "--state-file", muxState)
	mux.waitFor(t, "mux", "mux forwarding")
	r.writeAgentConfig(t, false)
	agent, _ := r.startAgent(t)

	dir := t.TempDir()
	muxFile, agentFile := filepath.Join(dir, "mux.pcapng"), filepath.Join(dir, "agent.pcapng")
	muxCap := capture(t, "mux", "--pin-dir", muxPins, "--vip", arVIP.String(), "-c", "100", "-w", muxFile)
	agentCap := capture(t, "agent", "--pin-dir", r.pins, "--vip", arVIP.String(), "-c", "100", "--point", "agent-rx,agent-up", "-w", agentFile)

	// 80 datagrams to each VIP, interleaved: 160 packets of arVIP at each
	// daemon's two points, so both captures reach their bound.
	sendUDP(t, r, 80)
	for _, c := range []struct {
		p    *proc
		what string
	}{{muxCap, "mux capture"}, {agentCap, "agent capture"}} {
		select {
		case <-c.p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not stop by itself at its bound:\n%s", c.what, c.p.output())
		}
		if !c.p.cmd.ProcessState.Success() {
			t.Fatalf("%s failed:\n%s", c.what, c.p.output())
		}
		if !strings.Contains(c.p.output(), "100 packets captured") {
			t.Fatalf("%s: want 100 packets captured:\n%s", c.what, c.p.output())
		}
	}
	checkCaptureFile(t, muxFile, map[string]int{"mux-rx": 50, "mux-tx": 50}, "mux-tx")
	checkCaptureFile(t, agentFile, map[string]int{"agent-rx": 50, "agent-up": 50}, "agent-rx")
	for _, pins := range []string{muxPins, r.pins} {
		st, err := dataplane.ReadCaptureState(pins)
		if err != nil {
			t.Fatal(err)
		}
		if st.Enabled {
			t.Fatalf("capture filter in %s still on after the command exited: %+v", pins, st)
		}
	}

	// Killed: nothing turns the filter off, but the kernel stops at the count.
	killed := capture(t, "mux", "--pin-dir", muxPins, "--point", "mux-rx", "-c", "10", "-w", filepath.Join(dir, "killed.pcapng"))
	killed.cmd.Process.Signal(syscall.SIGKILL)
	<-killed.done
	sendUDP(t, r, 15)
	st, err := dataplane.ReadCaptureState(muxPins)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Enabled || st.Remaining != 0 {
		t.Fatalf("after a killed capture of 10 and 30 packets: filter %+v, want still enabled with 0 remaining (the kernel's bound)", st)
	}

	// SIGTERM: the command exits and turns the filter off; the lock is free
	// again (a second capture can start right after).
	for i := 0; i < 2; i++ {
		term := capture(t, "mux", "--pin-dir", muxPins, "-c", "1000", "-w", filepath.Join(dir, "term.pcapng"))
		term.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-term.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("capture did not exit on SIGTERM:\n%s", term.output())
		}
		if !term.cmd.ProcessState.Success() {
			t.Fatalf("capture ended by SIGTERM failed:\n%s", term.output())
		}
		if st, err := dataplane.ReadCaptureState(muxPins); err != nil || st.Enabled {
			t.Fatalf("after SIGTERM: filter %+v (%v), want off", st, err)
		}
	}

	// One capture at a time.
	first := capture(t, "mux", "--pin-dir", muxPins, "-c", "1000", "-w", filepath.Join(dir, "first.pcapng"))
	out, err := beamerCmd("mux", "capture", "--pin-dir", muxPins, "-c", "10", "-w", filepath.Join(dir, "second.pcapng")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another capture is running") {
		t.Fatalf("a second capture at once: %v\n%s", err, out)
	}
	first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.done
	mux.stop(t, syscall.SIGTERM)
	agent.stop(t, syscall.SIGTERM)
}

func beamerCmd(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), childEnv+"=1")
	return c
}

// capture starts `beamer DAEMON capture ARGS` and waits until it captures.
func capture(t *testing.T, daemon string, args ...string) *proc {
	t.Helper()
	p := startKilledAtEnd(t, exec.Command(os.Args[0], append([]string{daemon, "capture"}, args...)...))
	p.waitFor(t, daemon+" capture", "capturing at ")
	return p
}

// sendUDP sends n datagrams to port 80 of each VIP from the client,
// alternating, 1 ms apart (each one through the mux and the agent before
// the next).
func sendUDP(t *testing.T, r *agentRestartRig, n int) {
	t.Helper()
	var conn *net.UDPConn
	if err := r.client.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: arClient.AsSlice()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := 0; i < n; i++ {
		for _, vip := range []netip.Addr{capOtherVIP, arVIP} {
			if _, err := conn.WriteToUDPAddrPort([]byte(fmt.Sprintf("datagram %d", i)), netip.AddrPortFrom(vip, 80)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// checkCaptureFile reads a capture with `beamer decode` and with tcpdump:
// exactly the packets per point wanted, every encapsulated one (at point
// encapAt) to arVIP inside, nothing about the other VIP.
func checkCaptureFile(t *testing.T, file string, want map[string]int, encapAt string) {
	t.Helper()
	out, err := beamerCmd("decode", "-o", "json", file).Output()
	if err != nil {
		t.Fatalf("beamer decode %s: %v", file, err)
	}
	var c decodedCapture
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("beamer decode %s: %v\n%s", file, err, out)
	}
	total := 0
	for point, n := range want {
		total += n
		if c.Points[point] != n {
			t.Errorf("%s: %d packets at %s, want %d (by point: %v)", file, c.Points[point], point, n, c.Points)
		}
	}
	if c.Packets != total || len(c.Points) != len(want) {
		t.Errorf("%s: %d packets at %v, want %d at %v", file, c.Packets, c.Points, total, want)
	}
	if len(c.Beamer) != want[encapAt] {
		t.Errorf("%s: %d encapsulated packets, want the %d of %s", file, len(c.Beamer), want[encapAt], encapAt)
	}
	for _, p := range c.Beamer {
		if p.Point != encapAt || p.Inner.Dst != arVIP.String() || p.Inner.DstPort != 80 || p.Option == nil {
			t.Errorf("%s: packet #%d at %s, inner %s:%d (option %v), want at %s to %s:80 with the option",
				file, p.Number, p.Point, p.Inner.Dst, p.Inner.DstPort, p.Option != nil, encapAt, arVIP)
		}
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tcpdump is not installed (scripts/apt-packages.txt installs it)")
		}
		t.Logf("no tcpdump here: %s read with beamer decode only", file)
		return
	}
	dump, err := exec.Command("tcpdump", "-n", "-r", file).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump -r %s: %v\n%s", file, err, dump)
	}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(string(dump)), "\n") {
		if strings.HasPrefix(l, "reading from file") {
			continue
		}
		lines++
		if strings.Contains(l, capOtherVIP.String()) || !strings.Contains(l, arVIP.String()+".80") {
			t.Errorf("tcpdump -r %s: %q is not a packet to %s:80", file, l, arVIP)
		}
	}
	if lines != total {
		t.Errorf("tcpdump -r %s: %d packets, want %d:\n%s", file, lines, total, dump)
	}
}
