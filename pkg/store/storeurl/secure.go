package storeurl

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
)

// Whoever can write the store decides where every mux sends traffic, so a
// store reachable from the network must be encrypted and authenticated.
// beamer therefore refuses, unless told --insecure (Options.Insecure):
//
//   - etcd:// to a non-loopback host without TLS;
//   - zk:// to a non-loopback host without TLS (ZooKeeper's digest
//     authentication sends the password in clear);
//   - embed:// serving clients on a non-loopback address without mutual
//     TLS (server-cert=, server-key= and client-ca=), or whose peer port,
//     advertised peer address or any member of initial-cluster is off
//     loopback without peer mutual TLS (peer-cert=, peer-key=, peer-ca=):
//     a member accepts any peer its CA signed, and only those.
//
// Loopback stays plaintext by default: reaching it already takes an account
// on the host.

// ErrInsecure is wrapped by the refusals above.
var ErrInsecure = errors.New("insecure store")

// Options tune Open beyond the URL.
type Options struct {
	// Insecure allows the plaintext or unauthenticated non-loopback stores
	// refused above (--insecure).
	Insecure bool
	// WaitForServer: embed:// waits this long for another process to serve
	// the directory before serving it itself (etcdstore.EmbedConfig).
	WaitForServer time.Duration
	// Logger receives the store client's warnings and errors (and the
	// embedded etcd server's); nil discards them.
	Logger *slog.Logger
	// ConnectOnly: embed:// connects to the server another process runs
	// and never starts one (etcdstore.EmbedConfig.ConnectOnly).
	ConnectOnly bool
}

// Check parses raw and applies the rules above without connecting, so a
// command can refuse a bad store before doing anything else.
func Check(raw string, o Options) error {
	t, err := Parse(raw)
	if err != nil {
		return err
	}
	if err := t.checkSecure(o); err != nil {
		return fmt.Errorf("store URL %q: %w", raw, err)
	}
	return nil
}

// loopback tells whether host (from host:port) is only reachable from this
// host. Names other than localhost are not resolved: they count as remote.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

const secureHint = `docs/control-plane.md, "Securing the store"`

// checkSecure applies the rules above to a parsed URL.
func (t *Target) checkSecure(o Options) error {
	if o.Insecure {
		return nil
	}
	remote := func(hosts ...string) string {
		for _, h := range hosts {
			if !loopback(h) {
				return h
			}
		}
		return ""
	}
	tlsOn := t.query.Get("ca") != "" || t.query.Get("cert") != "" || t.query.Get("tls") == "true"
	switch t.Scheme {
	case "etcd", "zk":
		if h := remote(t.Hosts...); h != "" && !tlsOn {
			what := "etcd"
			if t.Scheme == "zk" {
				what = "ZooKeeper (digest authentication sends the password in clear)"
			}
			return fmt.Errorf("%w: plaintext %s connection to %s, which is not a loopback address: anyone on the network could read and rewrite the store; use TLS (ca=, cert=, key=; %s) or pass --insecure", ErrInsecure, what, h, secureHint)
		}
	case "embed":
		client := t.embedConfig().ClientAddr
		if client == "" {
			client = "127.0.0.1:2379"
		}
		if remote(client) != "" && (t.query.Get("server-cert") == "" || t.query.Get("client-ca") == "") {
			return fmt.Errorf("%w: the embedded etcd would serve clients on %s, which is not a loopback address, without mutual TLS: anyone on the network could read and rewrite the store; give server-cert=, server-key= and client-ca= (%s) or pass --insecure", ErrInsecure, client, secureHint)
		}
		var peers []string // the default peer port is on loopback
		for _, p := range append([]string{t.query.Get("peer"), t.query.Get("peer-advertise")}, etcdstore.InitialClusterHosts(t.query.Get("initial-cluster"))...) {
			if p != "" {
				peers = append(peers, p)
			}
		}
		if p := remote(peers...); p != "" && t.embedConfig().PeerTLS == nil {
			return fmt.Errorf("%w: the embedded etcd's peer traffic would go to %s, which is not a loopback address, without mutual TLS: anyone on the network could join the cluster or read its replication; give peer-cert=, peer-key= and peer-ca= (%s) or pass --insecure", ErrInsecure, p, secureHint)
		}
	}
	return nil
}

// embedConfig is the embedded server's configuration from the URL.
func (t *Target) embedConfig() etcdstore.EmbedConfig {
	q := t.query
	c := etcdstore.EmbedConfig{Dir: t.Dir, ClientAddr: q.Get("client"), PeerAddr: q.Get("peer"), AdvertiseAddr: q.Get("advertise")}
	if q.Get("server-cert") != "" || q.Get("server-key") != "" || q.Get("client-ca") != "" {
		c.TLS = &etcdstore.ServerTLS{CertFile: q.Get("server-cert"), KeyFile: q.Get("server-key"), ClientCAFile: q.Get("client-ca")}
	}
	c.Name, c.PeerAdvertiseAddr, c.InitialCluster = q.Get("name"), q.Get("peer-advertise"), q.Get("initial-cluster")
	c.Join, c.ClusterToken = q.Get("cluster-state") == "existing", q.Get("cluster-token")
	// Peer TLS counts only whole (Parse refuses a part of it): mutual, so
	// the CA is part of it.
	if q.Get("peer-cert") != "" && q.Get("peer-key") != "" && q.Get("peer-ca") != "" {
		c.PeerTLS = &etcdstore.ServerTLS{CertFile: q.Get("peer-cert"), KeyFile: q.Get("peer-key"), ClientCAFile: q.Get("peer-ca")}
	}
	return c
}
