package readmetest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// The network the README's "Running it" describes: a LAN (a bridge in a
// namespace of its own, the switch) joining the router, the controller,
// the muxes and the servers; the client on its own link to the router.
// Every host's interface is eth0 (the router's client side is eth1); MTUs
// are left at their defaults (1500), as on a newcomer's hosts.
var (
	lanNet    = netip.MustParsePrefix("198.18.0.0/24")
	clientNet = netip.MustParsePrefix("198.18.1.0/24")
	routerLAN = netip.MustParseAddr("198.18.0.1")
	routerCli = netip.MustParseAddr("198.18.1.1")
	lanHosts  = []struct {
		name string
		addr netip.Addr
	}{
		{"controller", netip.MustParseAddr("198.18.0.2")},
		{"mux1", netip.MustParseAddr("198.18.0.11")},
		{"mux2", netip.MustParseAddr("198.18.0.12")},
		{"server1", netip.MustParseAddr("198.18.0.21")},
		{"server2", netip.MustParseAddr("198.18.0.22")},
	}
	clientAddr = netip.MustParseAddr("198.18.1.10")
	vip        = netip.MustParseAddr("198.18.100.1")
)

// host is a namespace with one shell in it, fed the README's blocks as an
// operator pastes them into a terminal on that host.
type host struct {
	name  string
	ns    *netlab.Namespace
	shell *exec.Cmd
	stdin *os.File
	log   string // the shell's stdout and stderr (the daemons' logs too)
	seq   int
}

// buildNetwork makes the namespaces and links: the LAN's hosts and the
// router on the rig's fabric (the switch, ports p-HOST), the client behind
// the router.
func buildNetwork(t *testing.T, rig *netlabtest.Rig) map[string]*netlab.Namespace {
	t.Helper()
	nss := map[string]*netlab.Namespace{"switch": rig.Fabric()}
	mk := func(name string) *netlab.Namespace {
		nss[name] = rig.Namespace(name)
		return nss[name]
	}
	router := mk("router")
	rig.AttachPort(router, "p-router", netip.PrefixFrom(routerLAN, lanNet.Bits()), 0)
	for _, h := range lanHosts {
		ns := mk(h.name)
		rig.AttachPort(ns, "p-"+h.name, netip.PrefixFrom(h.addr, lanNet.Bits()), 0)
		_, err := ns.Run("ip", "route", "add", "default", "via", routerLAN.String())
		netlabtest.Must(t, err)
	}
	client := mk("client")
	rig.Link(client, "eth0", netip.PrefixFrom(clientAddr, clientNet.Bits()), router, "eth1", netip.PrefixFrom(routerCli, clientNet.Bits()), 0)
	_, err := client.Run("ip", "route", "add", "default", "via", routerCli.String())
	netlabtest.Must(t, err)
	return nss
}

// startShell starts the host's shell in dir. pre are commands of the
// host's own setup (not the README's) run first.
func startShell(t *testing.T, name string, ns *netlab.Namespace, dir string, pre string) *host {
	t.Helper()
	h := &host{name: name, ns: ns, log: filepath.Join(dir, ".readme-"+name+".log")}
	out, err := os.Create(h.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// ip netns exec gives the shell a mount namespace of its own: mounts
	// made in it (the controller's /var/lib/beamer) stay the host's.
	h.shell = exec.Command("ip", "netns", "exec", ns.Name, "bash", "--noprofile", "--norc")
	h.shell.Dir = dir
	h.shell.Stdin, h.shell.Stdout, h.shell.Stderr = r, out, out
	h.shell.Env = append(os.Environ(), "PS4=+ ["+name+"] ")
	if err := h.shell.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	h.stdin = w
	h.send(t, "set -e -o pipefail -x\n"+pre, 20*time.Second)
	return h
}

// send runs text in the host's shell and waits for it to finish; a failed
// command ends the shell (set -e) and the test.
func (h *host) send(t *testing.T, text string, timeout time.Duration) string {
	t.Helper()
	h.seq++
	marker := fmt.Sprintf("@@readme-done-%d", h.seq)
	before := h.read()
	// The text goes through a file, with stdin from /dev/null: a command
	// that reads its input must not eat the commands after it.
	file := filepath.Join(filepath.Dir(h.log), fmt.Sprintf(".readme-%s-%d.sh", h.name, h.seq))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(h.stdin, "source %s </dev/null\necho %s\n", file, marker); err != nil {
		t.Fatalf("%s: the shell is gone: %v\n%s", h.name, err, h.tail(before))
	}
	deadline := time.Now().Add(timeout)
	for {
		all := h.read()
		if i := strings.Index(all[len(before):], marker+"\n"); i >= 0 {
			return all[len(before) : len(before)+i]
		}
		if h.shell.ProcessState != nil || time.Now().After(deadline) || !alive(h.shell.Process.Pid) {
			t.Fatalf("%s: did not finish within %v (or the shell exited):\n%s", h.name, timeout, h.tail(before))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *host) read() string {
	b, _ := os.ReadFile(h.log)
	return string(b)
}

// tail is what the host printed since before (its last 6000 bytes).
func (h *host) tail(before string) string {
	s := h.read()[len(before):]
	if len(s) > 6000 {
		s = "…" + s[len(s)-6000:]
	}
	return s
}

// alive reports whether the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// pidsIn lists the processes whose network namespace is ns.
func pidsIn(ns *netlab.Namespace) []int {
	var want syscall.Stat_t
	if syscall.Stat(filepath.Join("/var/run/netns", ns.Name), &want) != nil {
		return nil
	}
	links, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	var pids []int
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			continue
		}
		if pid, err := strconv.Atoi(strings.Split(l, "/")[2]); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopAll ends every process the test started in the hosts: SIGTERM first
// (a mux withdraws, drains and detaches; an agent undoes its changes), then
// SIGKILL for what is left after the grace time.
func stopAll(hosts []*host, grace time.Duration) (killed []string) {
	for _, h := range hosts {
		h.stdin.Close()
		for _, pid := range pidsIn(h.ns) {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(grace)
	for _, h := range hosts {
		for _, pid := range pidsIn(h.ns) {
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if alive(pid) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				killed = append(killed, fmt.Sprintf("%s: %d %s", h.name, pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		h.shell.Wait()
	}
	return killed
}
