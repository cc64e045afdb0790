package storetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Certs are PEM files made for one test in its temporary directory, so no
// private key is ever committed: a CA, a server certificate for the given
// IP addresses (usable for client authentication too, as etcd's HTTP
// gateway needs), a client certificate signed by the CA and one signed by another
// CA (an outsider).
type Certs struct {
	CA                    string // CA certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	RogueCert, RogueKey   string // client pair signed by an unrelated CA
	// RogueCA signed RoguePeerCert, a member certificate (serverAuth and
	// clientAuth, naming the same IPs as ServerCert) of another cluster.
	RogueCA                     string
	RoguePeerCert, RoguePeerKey string
	dir                         string
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// MakeCerts writes the files; ips name the server.
func MakeCerts(t testing.TB, ips ...net.IP) *Certs {
	t.Helper()
	c := &Certs{dir: t.TempDir()}
	ca := c.newCA(t, "beamer test CA", "ca")
	c.CA = filepath.Join(c.dir, "ca.pem")
	c.ServerCert, c.ServerKey = c.leaf(t, ca, "server", "store", ips,
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ClientCert, c.ClientKey = c.leaf(t, ca, "client", "mux", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	rogue := c.newCA(t, "some other CA", "rogue-ca")
	c.RogueCert, c.RogueKey = c.leaf(t, rogue, "rogue", "mux", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	c.RogueCA = filepath.Join(c.dir, "rogue-ca.pem")
	c.RoguePeerCert, c.RoguePeerKey = c.leaf(t, rogue, "rogue-peer", "store", ips,
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	return c
}

var serial atomic.Int64

func (c *Certs) newCA(t testing.TB, cn, file string) issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	c.write(t, file+".pem", "CERTIFICATE", der)
	return issuer{cert, key}
}

func (c *Certs) leaf(t testing.TB, ca issuer, file, cn string, ips []net.IP, usage []x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return c.write(t, file+".pem", "CERTIFICATE", der), c.write(t, file+"-key.pem", "PRIVATE KEY", kder)
}

func (c *Certs) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
