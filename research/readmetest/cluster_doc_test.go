package readmetest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// The section of docs/control-plane.md that sets up three controller hosts
// on the embedded store, and the hosts it names: the CA's machine (no
// network needed) and four controller hosts on one LAN (h4 replaces h3).
const clusterSection = "Three controller hosts on the embedded store"

var clusterHosts = []string{"ca", "h1", "h2", "h3", "h4"}

func controlPlaneDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/control-plane.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestControlPlaneThreeHostsBlocks: the section parses into blocks for the
// known hosts, every one of them used (no root needed).
func TestControlPlaneThreeHostsBlocks(t *testing.T) {
	blocks, err := SectionBlocks(controlPlaneDoc(t), clusterSection)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, h := range b.Hosts {
			if !slices.Contains(clusterHosts, h) {
				t.Errorf("docs/control-plane.md line %d: host %q is not one of %v", b.Line, h, clusterHosts)
			}
			seen[h] = true
		}
	}
	for _, h := range clusterHosts {
		if !seen[h] {
			t.Errorf("no block runs on %s", h)
		}
	}
}

// TestControlPlaneThreeHosts runs the section command for command on
// hosts that are network namespaces on one LAN: the certificates, a
// controller with its embedded etcd member on each of h1, h2, h3 (peer
// and client mutual TLS), the member list; then h3 dies (killed by the
// test), is removed, h4 is added and joins with the parameters `add`
// printed. It checks what the section says: the lists, the printed
// parameters, a controller elected, and the refusal it quotes.
func TestControlPlaneThreeHosts(t *testing.T) {
	netlabtest.RequireRoot(t)
	doc := controlPlaneDoc(t)
	blocks, err := SectionBlocks(doc, clusterSection)
	if err != nil {
		t.Fatal(err)
	}
	dir := workDir(t)
	rig := netlabtest.NewRig(t, "cpdoc")
	lan := netip.MustParsePrefix("198.18.0.0/24")
	hosts := map[string]*host{}
	var order []*host
	for i, name := range clusterHosts {
		ns := rig.Namespace(name)
		pre := ""
		if name != "ca" {
			rig.AttachPort(ns, "p-"+name, netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), lan.Bits()), 0)
			// The host's state directory, in its own mount namespace.
			pre = "mkdir -p /var/lib/beamer && mount -t tmpfs -o mode=0700 tmpfs /var/lib/beamer"
		}
		h := startShell(t, name, ns, dir, pre)
		hosts[name] = h
		order = append(order, h)
	}
	t.Cleanup(func() {
		if killed := stopAll(order, 8*time.Second); len(killed) > 0 {
			t.Errorf("still running 8 s after SIGTERM (killed): %v", killed)
		}
		if t.Failed() || testing.Verbose() {
			for _, h := range order {
				t.Logf("---- %s ----\n%s", h.name, h.tail(""))
			}
		}
	})
	// ready waits (at most 40 s) for a host's member to serve: its
	// controller writes the endpoint file once a majority runs.
	ready := func(name string) {
		hosts[name].send(t, `for i in $(seq 80); do [ -s /var/lib/beamer/beamer-endpoint ] && break; sleep 0.5; done; [ -s /var/lib/beamer/beamer-endpoint ]`, 60*time.Second)
	}

	start := time.Now()
	var lists []string // outputs of the blocks listing the members
	added := ""
	for _, b := range blocks {
		for _, name := range b.Hosts {
			h := hosts[name]
			switch {
			case strings.Contains(b.Script, "store members --store"):
				for _, m := range []string{"h1", "h2", "h3"} {
					ready(m)
				}
			case strings.Contains(b.Script, "store members remove h3"):
				// h3 dies: its controller (and so its member) is killed.
				killController(t, hosts["h3"])
			}
			out := h.send(t, b.Script, 90*time.Second)
			switch {
			case strings.Contains(b.Script, "store members --store"):
				lists = append(lists, out)
			case strings.Contains(b.Script, "store members add"):
				added = out
			}
		}
	}
	// What `add` printed is what the section shows and h4 was started with.
	m := regexp.MustCompile(`(?m)^name=h4&\S+$`).FindString(added)
	if m == "" || !strings.Contains(doc, "\n"+m+"\n") {
		t.Errorf("add printed %q, which the section does not show", added)
	}
	ready("h4")
	lists = append(lists, hosts["h1"].send(t, "bin/beamer store members --store \"$S\"\n", 30*time.Second))
	t.Logf("section run in %v", time.Since(start).Round(time.Millisecond))
	if len(lists) != 2 {
		t.Fatalf("%d member lists, want the section's and the one after h4 joined", len(lists))
	}
	for i, want := range [][]string{{"h1", "h2", "h3"}, {"h1", "h2", "h4"}} {
		if got := listed(lists[i]); !slices.Equal(got, want) {
			t.Errorf("member list %d: %v, want %v:\n%s", i+1, got, want, lists[i])
		}
	}
	elected := 0
	for _, name := range []string{"h1", "h2", "h3", "h4"} {
		elected += strings.Count(hosts[name].read(), `msg="elected controller"`)
	}
	if elected == 0 {
		t.Error("no controller was elected")
	}

	// The refusal the section quotes, word for word.
	q := regexp.MustCompile(`(?m)^beamer: open store: store URL "([^"]+)": insecure store: .*$`).FindStringSubmatch(doc[strings.Index(doc, "## "+clusterSection):])
	if q == nil {
		t.Fatal("the section quotes no refusal")
	}
	out, err := exec.Command(filepath.Join(dir, "bin", "beamer"), "controller", "--store", q[1]).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n") // the last: the error; before it, log lines
	if err == nil || lines[len(lines)-1] != q[0] {
		t.Errorf("refusal:\n got %s\nwant %s", out, q[0])
	}
}

// listed are the member names of a `beamer store members` screen, sorted.
func listed(out string) []string {
	var names []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[2], "https://") {
			names = append(names, f[1])
		}
	}
	slices.Sort(names)
	return names
}

// killController SIGKILLs the beamer controller running in h's namespace
// (a host that dies) and waits until it is gone.
func killController(t *testing.T, h *host) {
	t.Helper()
	for _, pid := range pidsIn(h.ns) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(string(cmd), "controller\x00--store") {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		for deadline := time.Now().Add(10 * time.Second); alive(pid); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: controller %d survived SIGKILL", h.name, pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	t.Fatalf("%s: no controller running", h.name)
}
