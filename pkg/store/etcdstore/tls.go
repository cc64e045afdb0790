package etcdstore

import (
	"errors"
	"fmt"
	"os"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// ServerTLS makes an embedded etcd serve its clients over TLS, with etcd's
// own TLS support (transport.TLSInfo): no crypto of ours. With ClientCAFile
// it is mutual TLS: a client must present a certificate signed by that CA,
// which is how the embedded store authenticates muxes, ctl and controllers
// on other hosts (etcd's client-certificate authentication).
type ServerTLS struct {
	// CertFile and KeyFile are the server's certificate and key (PEM). The
	// certificate names every address clients dial (IP or DNS SANs) and
	// should allow client authentication too (extended key usages
	// serverAuth and clientAuth): etcd's gateway connects to the server
	// with it.
	CertFile, KeyFile string
	// ClientCAFile, if set, is the CA (PEM) client certificates must be
	// signed by; clients without one are refused during the handshake.
	ClientCAFile string
}

// tlsInfo checks the files exist (so a typo is reported by name, not as a
// handshake failure later) and returns etcd's description of them.
func (s *ServerTLS) tlsInfo() (transport.TLSInfo, error) {
	if s.CertFile == "" || s.KeyFile == "" {
		return transport.TLSInfo{}, errors.New("etcdstore: server TLS needs both a certificate and a key")
	}
	for _, f := range []string{s.CertFile, s.KeyFile, s.ClientCAFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return transport.TLSInfo{}, fmt.Errorf("etcdstore: server TLS: %w", err)
		}
	}
	info := transport.TLSInfo{CertFile: s.CertFile, KeyFile: s.KeyFile}
	if s.ClientCAFile != "" {
		info.TrustedCAFile, info.ClientCertAuth = s.ClientCAFile, true
	}
	// Fail now with the file names if the pair does not load.
	if _, err := info.ServerConfig(); err != nil {
		return transport.TLSInfo{}, fmt.Errorf("etcdstore: server TLS (%s, %s): %w", s.CertFile, s.KeyFile, err)
	}
	return info, nil
}
