package storetest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
)

// ClusterMember is one member of a replicated embedded etcd started by a
// test, on loopback ports free when it was made.
type ClusterMember struct {
	Name, Dir            string
	PeerAddr, ClientAddr string
	Embedded             *etcdstore.Embedded // nil while stopped
}

// FreeAddrs returns n distinct loopback host:ports, free now (all held
// open at once, so none repeats).
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// NewClusterMember names a member and picks its ports and data directory.
func NewClusterMember(t testing.TB, name string) *ClusterMember {
	a := FreeAddrs(t, 2)
	return &ClusterMember{Name: name, Dir: t.TempDir(), PeerAddr: a[0], ClientAddr: a[1]}
}

// InitialCluster is etcd's list of ms (https: peer TLS).
func InitialCluster(ms ...*ClusterMember) string {
	var l []string
	for _, m := range ms {
		l = append(l, m.Name+"=https://"+m.PeerAddr)
	}
	return strings.Join(l, ",")
}

// Config is m's embedded configuration: peer and client mutual TLS with
// c's server certificate (which names 127.0.0.1) and CA.
func (m *ClusterMember) Config(c *Certs, initial string, join bool) etcdstore.EmbedConfig {
	return etcdstore.EmbedConfig{Dir: m.Dir, Name: m.Name, ClientAddr: m.ClientAddr, PeerAddr: m.PeerAddr,
		InitialCluster: initial, Join: join, StartTimeout: 20 * time.Second,
		TLS:     &etcdstore.ServerTLS{CertFile: c.ServerCert, KeyFile: c.ServerKey, ClientCAFile: c.CA},
		PeerTLS: &etcdstore.ServerTLS{CertFile: c.ServerCert, KeyFile: c.ServerKey, ClientCAFile: c.CA}}
}

// Endpoint is m's client URL.
func (m *ClusterMember) Endpoint() string { return "https://" + m.ClientAddr }

// Stop stops m's server (a dead member).
func (m *ClusterMember) Stop() {
	if m.Embedded != nil {
		m.Embedded.Close()
		m.Embedded = nil
	}
}

// StartCluster bootstraps a cluster of the named members at once (a new
// member is ready only once a majority runs), each stopped at cleanup.
func StartCluster(t testing.TB, c *Certs, names ...string) []*ClusterMember {
	t.Helper()
	ms := make([]*ClusterMember, len(names))
	addrs := FreeAddrs(t, 2*len(names)) // all at once: none repeats
	for i, n := range names {
		ms[i] = &ClusterMember{Name: n, Dir: t.TempDir(), PeerAddr: addrs[2*i], ClientAddr: addrs[2*i+1]}
	}
	initial := InitialCluster(ms...)
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Embedded, errs[i] = etcdstore.StartEmbedded(m.Config(c, initial, false))
		}()
	}
	wg.Wait()
	for _, m := range ms {
		t.Cleanup(m.Stop)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %s: %v", names[i], err)
		}
	}
	return ms
}

// ClientTLS is the client side of c: its CA and client certificate.
func (c *Certs) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	return c.tlsWith(t, c.CA, c.ClientCert, c.ClientKey)
}

func (c *Certs) tlsWith(t testing.TB, ca, cert, key string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal(fmt.Errorf("no certificate in %s", ca))
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// PeerDialTLS is what a peer holding cert/key (any CA's) presents when it
// dials a member, trusting c's CA for the member's own certificate.
func (c *Certs) PeerDialTLS(t testing.TB, cert, key string) *tls.Config {
	t.Helper()
	return c.tlsWith(t, c.CA, cert, key)
}
