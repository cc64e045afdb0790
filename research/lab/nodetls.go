package lab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
)

// The lab's node APIs (the agents' and the muxes') run mutual TLS, with
// certificates scripts/store-certs.sh makes in the run directory, the way
// an operator makes them (docs/operations.md, "Trust boundaries"): the
// controller holds the controller identity, each mux and agent its own,
// naming the address the controller dials. A beamer binary without the
// TLS flags (an older one the lab compares against) runs as before.

// muxNodeAPIPort is where lab muxes serve their node API (the Prism
// keep-alive bits), beside --metrics.
const muxNodeAPIPort = 9101

func (l *Lab) certDir() string { return filepath.Join(l.opts.Dir, "certs") }

// identity issues NAME=ROLE[@ADDR] once and names its files.
func (l *Lab) identity(name, role string, addr netip.Addr) (nodeauth.Files, error) {
	l.certMu.Lock()
	defer l.certMu.Unlock()
	dir := l.certDir()
	f := nodeauth.FilesIn(dir, name)
	if _, err := os.Stat(f.Cert); err == nil {
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	id := name + "=" + role
	if addr.IsValid() {
		id += "@" + addr.String()
	}
	return f, nodeauth.Issue(dir, ctlAddr.String(), id)
}

func tlsArgs(prefix string, f nodeauth.Files) []string {
	return []string{"--" + prefix + "-cert", f.Cert, "--" + prefix + "-key", f.Key, "--" + prefix + "-ca", f.CA}
}

// controllerTLSArgs are the controller's --node-* flags.
func (l *Lab) controllerTLSArgs() ([]string, error) {
	if !l.nodeTLS {
		return nil, nil
	}
	f, err := l.identity("controller", string(nodeauth.RoleController), netip.Addr{})
	return tlsArgs("node", f), err
}

// agentTLSArgs are agent i's --api-* flags.
func (l *Lab) agentTLSArgs(i int) ([]string, error) {
	if !l.nodeTLS {
		return nil, nil
	}
	f, err := l.identity(fmt.Sprintf("agent%d", i), string(nodeauth.RoleAgent), l.dip(i))
	return tlsArgs("api", f), err
}

// muxAPIArgs are mux i's --api and --api-* flags.
func (l *Lab) muxAPIArgs(i int) ([]string, error) {
	if !l.nodeTLS {
		return nil, nil
	}
	f, err := l.identity(fmt.Sprintf("mux%d", i), string(nodeauth.RoleMux), l.muxHop(i))
	args := append([]string{"--api", netip.AddrPortFrom(l.muxHop(i), muxNodeAPIPort).String()}, tlsArgs("api", f)...)
	return args, err
}

// muxKeepAlivePort is the port the controller collects keep-alive bits on.
func (l *Lab) muxKeepAlivePort() uint16 {
	if l.nodeTLS {
		return muxNodeAPIPort
	}
	return 9100 // an older binary: its --metrics address
}
