package muxd

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// restartNet: client (which is also the router: it forwards, and routes
// the VIP to the mux) — bridge — mux, server. The mux's default route
// points back at the router, as a mux's does: a mux whose XDP program is
// gone but whose forwarding is on sends VIP packets back to the router,
// which sends them to the mux again, until their TTL runs out.
type restartNet struct {
	client, mux, server *netlab.Namespace
	dir                 string // configuration, pins and state of the mux processes
	pinDir              string
}

var (
	rsVIP    = netip.MustParseAddr("198.18.100.1")
	rsClient = netip.MustParseAddr("198.18.0.100")
	rsMux    = netip.MustParseAddr("198.18.0.1")
	rsServer = netip.MustParseAddr("198.18.0.10")
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newRestartNet(t *testing.T) *restartNet { return newRestartNetMTU(t, 1600) }

// newRestartNetMTU gives the mux's link the MTU muxMTU.
func newRestartNetMTU(t *testing.T, muxMTU int) *restartNet {
	rig := netlabtest.NewRig(t, "muxrs")
	d := rig.DSR(netlabtest.DSRLayout{VIP: rsVIP, Client: netip.PrefixFrom(rsClient, 24), Muxes: []netip.Prefix{netip.PrefixFrom(rsMux, 24)},
		Servers: []netip.Prefix{netip.PrefixFrom(rsServer, 24)}, MTU: 1600, MuxMTU: muxMTU})
	r := &restartNet{client: d.Client, mux: d.Muxes[0], server: d.Servers[0], dir: t.TempDir()}
	r.pinDir = netlabtest.PinDir(t, "restart")
	must(t, r.client.Sysctl("net.ipv4.ip_forward", "1"))
	_, err := r.mux.Run("ip", "route", "add", "default", "via", rsClient.String())
	must(t, err)
	must(t, r.mux.Sysctl("net.ipv4.conf.eth0.forwarding", "0"))

	// The server: VIP on loopback, the agent, an echo service.
	netlabtest.ServeVIP(t, r.server, rsVIP, "net.ipv4.ip_forward=1")
	a, err := dataplane.LoadAgent(dataplane.AgentOptions{Addr: rsServer, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []dataplane.AgentVIP{{VIP: rsVIP, Buckets: 67, ChainWindow: 4 * time.Minute}}})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	must(t, r.server.Do(func() error {
		l, err := a.Attach("eth0")
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}))
	netlabtest.ServeEcho(t, netlabtest.Listen(t, r.server, nil, "tcp4", netip.AddrPortFrom(rsVIP, 80).String()))

	must(t, os.WriteFile(filepath.Join(r.dir, "mux.yaml"), []byte(`
interface: eth0
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 67
    servers:
      - {id: 1025, address: 198.18.0.10}
`), 0o644))
	return r
}

// muxProcess is a mux daemon in its own process in the mux namespace.
type muxProcess struct {
	cmd  *exec.Cmd
	done chan error
}

func (r *restartNet) startMux(t *testing.T) *muxProcess {
	// nsenter enters the network namespace only: `ip netns exec` would also
	// give the process a mount namespace with its own bpffs, whose pins
	// die with the process.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+r.mux.Name, "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+filepath.Join(r.dir, "mux.yaml"), childPinEnv+"="+r.pinDir,
		childStateEnv+"="+filepath.Join(r.dir, "mux-state.json"))
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	p := &muxProcess{cmd: cmd, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, out)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("mux process did not start: %q %s", line, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mux process not ready after 20s: %s", stderr.String())
	}
	return p
}

// forwardedByKernel is the mux namespace's IP ForwDatagrams: packets its
// kernel routed on. The XDP mux handles VIP packets before the kernel sees
// them, so this stays still unless the program is gone (the loop).
func (r *restartNet) forwardedByKernel(t *testing.T) uint64 {
	out, err := r.mux.Run("cat", "/proc/net/snmp")
	must(t, err)
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "Ip: Forwarding") {
			names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			for j, n := range names {
				if n == "ForwDatagrams" {
					v, _ := strconv.ParseUint(vals[j], 10, 64)
					return v
				}
			}
		}
	}
	t.Fatalf("no ForwDatagrams in\n%s", out)
	return 0
}

// pinnedStateIDs are the ids of the pinned counter and connection-table
// maps: the same maps must serve the next mux.
func (r *restartNet) pinnedStateIDs(t *testing.T) [2]ebpf.MapID {
	var ids [2]ebpf.MapID
	for i, name := range []string{"mux_counters", "conntrack"} {
		m, err := ebpf.LoadPinnedMap(filepath.Join(r.pinDir, name), nil)
		must(t, err)
		info, err := m.Info()
		must(t, err)
		ids[i], _ = info.ID()
		m.Close()
	}
	return ids
}

func (r *restartNet) xdpProgram(t *testing.T) (uint32, bool) {
	var id uint32
	var ok bool
	must(t, r.mux.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		res, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: 37 /* BPF_XDP */})
		if err == nil && len(res.Programs) > 0 {
			id, ok = uint32(res.Programs[0].ID), true
			return nil
		}
		out, _ := r.mux.Run("ip", "-d", "link", "show", "eth0")
		if i := strings.Index(out, "prog/xdp id "); i >= 0 {
			f := strings.Fields(out[i+len("prog/xdp id "):])
			v, _ := strconv.ParseUint(f[0], 10, 32)
			id, ok = uint32(v), true
		}
		return nil
	}))
	return id, ok
}

// TestMuxKillRestartUnderTraffic SIGKILLs a mux daemon while TCP
// connections through it exchange data, checks its pinned program keeps
// forwarding (no packet routed by the mux's kernel: no loop), starts a new
// daemon that swaps its program into the pinned link, and checks no
// connection broke. A graceful stop then detaches, unpins and restores
// forwarding. (Issue 11, row "mux SIGKILLed".)
func TestMuxKillRestartUnderTraffic(t *testing.T) {
	r := newRestartNet(t)
	first := r.startMux(t)
	firstProg, ok := r.xdpProgram(t)
	if !ok {
		t.Fatal("no XDP program on the mux's eth0")
	}

	load := netlabtest.StartLoad(t, r.client, netlabtest.LoadOptions{Network: "tcp4", Address: netip.AddrPortFrom(rsVIP, 80).String(),
		Echo: 8, Every: 20 * time.Millisecond, Pad: 201, Stall: 15 * time.Second, Within: 30 * time.Second})
	load.Flowing(t, "before the kill")

	stateIDs := r.pinnedStateIDs(t)
	kernelBefore := r.forwardedByKernel(t)
	must(t, first.cmd.Process.Kill())
	<-first.done
	if id, ok := r.xdpProgram(t); !ok || id != firstProg {
		t.Fatalf("after SIGKILL: XDP program %d (attached %v), want the killed mux's %d still attached", id, ok, firstProg)
	}
	load.Flowing(t, "with the mux process dead")
	if n := r.forwardedByKernel(t) - kernelBefore; n > 0 {
		t.Errorf("the mux's kernel forwarded %d packets while its daemon was dead: VIP packets looped", n)
	}

	second := r.startMux(t)
	secondProg, ok := r.xdpProgram(t)
	if !ok || secondProg == firstProg {
		t.Fatalf("after the restart: XDP program %d (attached %v), want a new one swapped in for %d", secondProg, ok, firstProg)
	}
	load.Flowing(t, "after the restart")
	if got := r.pinnedStateIDs(t); got != stateIDs {
		t.Errorf("state maps after the restart %v, want the killed mux's %v adopted (counters and connection table kept)", got, stateIDs)
	}
	if n := r.forwardedByKernel(t) - kernelBefore; n > 0 {
		t.Errorf("the mux's kernel forwarded %d packets across the restart", n)
	}
	if failures := load.End(); len(failures) > 0 {
		t.Fatalf("connections broke: %v", failures)
	}

	must(t, second.cmd.Process.Signal(os.Interrupt))
	if err := <-second.done; err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if _, ok := r.xdpProgram(t); ok {
		t.Error("XDP program still attached after a graceful stop")
	}
	if _, err := os.Stat(r.pinDir); !os.IsNotExist(err) {
		t.Errorf("pins left in %s: %v", r.pinDir, err)
	}
	if out, _ := r.mux.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "0" {
		t.Errorf("forwarding %q after a graceful stop, want 0 restored", strings.TrimSpace(out))
	}
	if _, err := os.Stat(filepath.Join(r.dir, "mux-state.json")); !os.IsNotExist(err) {
		t.Errorf("state file left: %v", err)
	}
}
