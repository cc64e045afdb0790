package nodeauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// Files name a node's certificate, its key and the CA that signs every
// identity (PEM files, as scripts/store-certs.sh writes them).
type Files struct {
	CA, Cert, Key string
}

// Set reports whether any file is named.
func (f Files) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

func (f Files) load() (*x509.CertPool, tls.Certificate, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, tls.Certificate{}, errors.New("mutual TLS needs a CA, a certificate and its key (all three)")
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, tls.Certificate{}, fmt.Errorf("%s: no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("certificate %s, key %s: %w", f.Cert, f.Key, err)
	}
	return pool, cert, nil
}

// ServerConfig is a node API's TLS: it presents the node's certificate,
// which must carry the role want, and requires a client certificate signed
// by the CA.
func ServerConfig(f Files, want Role) (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	if err := checkOwnRole(cert, want); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, nil
}

// ClientConfig is the controller's TLS towards the nodes: it presents the
// controller's certificate and accepts a node whose certificate the CA
// signed for the address dialled (IP SAN) and that carries a node role.
func ClientConfig(f Files) (*tls.Config, error) {
	c, err := PeerConfig(f, "node", RoleAgent, RoleMux)
	if err != nil {
		return nil, err
	}
	if err := checkOwnRole(c.Certificates[0], RoleController); err != nil {
		return nil, err
	}
	return c, nil
}

// PeerConfig is a client's TLS towards a server named peer in messages: it
// presents f's certificate, whatever its role (the server decides what the
// role may do), and accepts a server whose certificate the CA signed for the
// address dialled and that carries one of the roles want (the management
// API's callers: want controller).
func PeerConfig(f Files, peer string, want ...Role) (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%s presented no certificate", peer)
			}
			role, err := RoleOf(cs.PeerCertificates[0])
			if err != nil {
				return err
			}
			if !slices.Contains(want, role) {
				return fmt.Errorf("%s certificate has role %q, want %s", peer, role, roleList(want))
			}
			return nil
		}}, nil
}

// roleList is "a", "a or b", "a, b or c".
func roleList(roles []Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func checkOwnRole(c tls.Certificate, want Role) error {
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return err
		}
	}
	role, err := RoleOf(leaf)
	if err != nil {
		return err
	}
	if role != want {
		return fmt.Errorf("certificate %q has role %q, this process needs %q", leaf.Subject.CommonName, role, want)
	}
	return nil
}

// CheckPlaintext refuses a plaintext node API on addr unless every address
// it binds is loopback or insecure is set (--insecure).
func CheckPlaintext(what, addr string, insecure bool) error {
	if insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, addr, err)
	}
	a, err := netip.ParseAddr(host)
	if host == "localhost" || (err == nil && a.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%s on %s without TLS: anyone on that network could call it; give its certificate (--api-cert, --api-key, --api-ca: scripts/store-certs.sh), or --insecure", what, addr)
}

// Scheme is the URL scheme of a node API client: https with a TLS config.
func Scheme(c *tls.Config) string {
	if c != nil {
		return "https"
	}
	return "http"
}
