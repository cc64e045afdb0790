package beamercli

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// proc is a beamer process started by a test in a namespace.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (p *proc) Write(b []byte) (int, error) { p.mu.Lock(); defer p.mu.Unlock(); return p.out.Write(b) }
func (p *proc) output() string              { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

// beamer runs `beamer ARGS` (this test binary as beamer) in ns, in the
// background; it is killed when the test ends.
func beamer(t *testing.T, ns *netlab.Namespace, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: ns.Command(os.Args[0], args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), childEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// beamerRun runs `beamer ARGS` in ns to completion (30 s at most).
func beamerRun(t *testing.T, ns *netlab.Namespace, args ...string) (string, error) {
	t.Helper()
	p := beamer(t, ns, args...)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("beamer %s: still running after 30 s:\n%s", strings.Join(args, " "), p.output())
	}
	if !p.cmd.ProcessState.Success() {
		return p.output(), fmt.Errorf("exit %d", p.cmd.ProcessState.ExitCode())
	}
	return p.output(), nil
}

// waitFor waits until the process output contains s.
func (p *proc) waitFor(t *testing.T, what, s string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(p.output(), s) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before %q:\n%s", what, s, p.output())
		case <-deadline:
			t.Fatalf("%s: no %q after 60 s:\n%s", what, s, p.output())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRemoteMuxMutualTLS is the README's remote-mux setup made safe: a
// controller in one namespace serves its embedded etcd on a non-loopback
// address with mutual TLS; a mux in another namespace reads the instance
// from it and follows new generations; ctl, on either host, calls the
// controller's management API with its own certificate (never the
// store's); an API caller without a certificate of the CA is refused; a
// plaintext store or API on a non-loopback address is refused by the
// controller, ctl and the mux unless --insecure.
func TestRemoteMuxMutualTLS(t *testing.T) {
	rig := netlabtest.NewRig(t, "tls")
	ctlNS, muxNS := rig.Namespace("ctl"), rig.Namespace("mux")
	rig.Link(ctlNS, "c0", netip.MustParsePrefix("198.18.0.1/24"), muxNS, "m0", netip.MustParsePrefix("198.18.0.2/24"), 0)
	c := storetest.MakeCerts(t, net.ParseIP("198.18.0.1"), net.ParseIP("127.0.0.1"))
	dir := t.TempDir()
	client := fmt.Sprintf("ca=%s&cert=%s&key=%s", c.CA, c.ClientCert, c.ClientKey)
	embed := fmt.Sprintf("embed://%s?client=198.18.0.1:2379&server-cert=%s&server-key=%s&client-ca=%s&%s",
		dir, c.ServerCert, c.ServerKey, c.CA, client)
	remote := "etcd://198.18.0.1:2379?" + client
	// The management API's identities: the controller's, an admin, a reader.
	ids := t.TempDir()
	if err := nodeauth.Issue(ids, "198.18.0.1", "apictl=controller@198.18.0.1", "op=admin", "viewer=read"); err != nil {
		t.Fatal(err)
	}
	api := "198.18.0.1:9400"
	as := func(name string) []string {
		f := nodeauth.FilesIn(ids, name)
		return []string{"--api", api, "--cert", f.Cert, "--key", f.Key, "--ca", f.CA}
	}
	cf := nodeauth.FilesIn(ids, "apictl")

	ctl := beamer(t, ctlNS, "controller", "--store", embed, "--no-health-checks", "--identity", "tls-controller",
		"--api", api, "--api-cert", cf.Cert, "--api-key", cf.Key, "--api-ca", cf.CA)
	ctl.waitFor(t, "controller", "campaigning")
	for _, args := range [][]string{
		append([]string{"ctl", "create", "web", "--vip", "198.18.100.1", "--ports", "80", "--buckets", "64"}, as("op")...),
		append([]string{"ctl", "add-dip", "web", "1025", "198.18.0.10"}, as("op")...),
	} {
		if out, err := beamerRun(t, ctlNS, args...); err != nil {
			t.Fatalf("beamer %s: %v\n%s\ncontroller:\n%s", strings.Join(args, " "), err, out, ctl.output())
		}
	}

	// The remote mux, over mutual TLS.
	mux := beamer(t, muxNS, "mux", "--store", remote, "--instance", "web", "--iface", "m0", "--xdp-mode", "generic",
		"--metrics", "127.0.0.1:9100", "--pin-dir", "-")
	mux.waitFor(t, "mux", "mux forwarding")
	if out := mux.output(); !strings.Contains(out, `generation=1 buckets=64 servers=1`) {
		t.Fatalf("mux did not load generation 1 with one server:\n%s", out)
	}
	// A change made after it started reaches it.
	if out, err := beamerRun(t, ctlNS, append([]string{"ctl", "add-dip", "web", "1026", "198.18.0.11"}, as("op")...)...); err != nil {
		t.Fatalf("add-dip: %v\n%s", err, out)
	}
	for i := 0; ; i++ {
		out, _ := muxNS.Run("curl", "-s", "http://127.0.0.1:9100/metrics")
		if strings.Contains(out, `beamer_mux_generation{lb_instance="web"} 2`) {
			break
		}
		if i > 200 {
			t.Fatalf("remote mux never reached generation 2:\n%s\nmux log:\n%s", out, mux.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ctl from the mux's host, with a read certificate: reads, and may
	// not change anything.
	if out, err := beamerRun(t, muxNS, append([]string{"ctl", "list"}, as("viewer")...)...); err != nil || !strings.Contains(out, "controller: tls-controller") {
		t.Fatalf("ctl list over mutual TLS: %v\n%s", err, out)
	}
	if out, err := beamerRun(t, muxNS, append([]string{"ctl", "drain", "web", "1025"}, as("viewer")...)...); err == nil || !strings.Contains(out, `permission denied: role "read" may not call Drain`) {
		t.Errorf("ctl drain with a read certificate: %v\n%s", err, out)
	}

	// Refused: another CA's certificate; the store's client certificate
	// (no role); plaintext.
	for what, files := range map[string][]string{
		"another CA":                     {"--api", api, "--cert", c.RogueCert, "--key", c.RogueKey, "--ca", cf.CA},
		"the store's client certificate": {"--api", api, "--cert", c.ClientCert, "--key", c.ClientKey, "--ca", cf.CA},
	} {
		out, err := beamerRun(t, muxNS, append([]string{"ctl", "list", "--timeout", "5s"}, files...)...)
		if err == nil || !strings.Contains(out, "no controller answered") && !strings.Contains(out, "permission denied") {
			t.Errorf("%s: ctl list: %v\n%s", what, err, out)
		}
	}
	if out, err := beamerRun(t, muxNS, "ctl", "list", "--api", api); err == nil || !strings.Contains(out, "--api "+api+" without TLS") {
		t.Errorf("ctl list in plaintext off loopback: %v\n%s", err, out)
	}
	// With --insecure it tries, and the TLS server does not answer it.
	if out, err := beamerRun(t, muxNS, "ctl", "list", "--insecure", "--api", api, "--timeout", "5s"); err == nil || !strings.Contains(out, "no controller answered") {
		t.Errorf("plaintext with --insecure: %v\n%s", err, out)
	}
	// The store itself refuses a client without a certificate of its CA
	// (the mux is its client now that ctl is not).
	for what, url := range map[string]string{
		"no client certificate": "etcd://198.18.0.1:2379?timeout=2s&ca=" + c.CA,
		"another CA":            fmt.Sprintf("etcd://198.18.0.1:2379?timeout=2s&ca=%s&cert=%s&key=%s", c.CA, c.RogueCert, c.RogueKey),
	} {
		out, err := beamerRun(t, muxNS, "mux", "--store", url, "--instance", "web", "--iface", "lo", "--xdp-mode", "generic", "--pin-dir", "-")
		if err == nil || !strings.Contains(out, "(TLS: remote error: tls: certificate required)") {
			t.Errorf("%s: mux: %v\n%s", what, err, out)
		}
	}
	plain := "etcd://198.18.0.1:2379?timeout=2s"
	refusal := `insecure store: plaintext etcd connection to 198.18.0.1:2379, which is not a loopback address`
	if out, err := beamerRun(t, muxNS, "mux", "--store", plain, "--instance", "web", "--iface", "m0", "--xdp-mode", "generic"); err == nil || !strings.Contains(out, refusal) {
		t.Errorf("beamer mux --store %s: %v\n%s", plain, err, out)
	}
	// A controller asked to serve plaintext on a non-loopback address.
	plainEmbed := fmt.Sprintf("embed://%s?client=198.18.0.1:2479&peer=127.0.0.1:2480", t.TempDir())
	out, err := beamerRun(t, ctlNS, "controller", "--store", plainEmbed, "--no-health-checks")
	if err == nil || !strings.Contains(out, "insecure store: the embedded etcd would serve clients on 198.18.0.1:2479, which is not a loopback address, without mutual TLS") {
		t.Errorf("plaintext controller: %v\n%s", err, out)
	}
	if t.Failed() {
		t.Logf("controller log:\n%s", ctl.output())
	}
}
