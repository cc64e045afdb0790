package etcdstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

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
	// serverAuth and clientAuth): etcd's HTTP/JSON gateway connects to the
	// server with it (beamer's gRPC clients work without).
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

// diagnose says why a TLS-related connection failed, when it can: gRPC
// reports a refused client certificate or a plaintext client at a TLS
// server only as a timeout. It makes one handshake with the client's own
// settings (or, for a plaintext client, a handshake that only detects that
// the server speaks TLS) and sends no data. "" when nothing was learnt.
func diagnose(endpoint string, cfg *tls.Config, timeout time.Duration) string {
	host := endpoint
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	d := &net.Dialer{Timeout: timeout}
	probe := cfg
	if probe == nil {
		// Detection only: no certificate is trusted or data exchanged.
		probe = &tls.Config{InsecureSkipVerify: true}
	} else {
		probe = cfg.Clone()
		if probe.ServerName == "" {
			probe.ServerName, _, _ = net.SplitHostPort(host)
		}
	}
	conn, err := tls.DialWithDialer(d, "tcp", host, probe)
	if cfg == nil {
		if err == nil {
			conn.Close()
			return "the server speaks TLS: give the store URL ca= (and cert=, key= if it asks for a client certificate)"
		}
		return ""
	}
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return ""
		}
		return "TLS handshake: " + err.Error()
	}
	defer conn.Close()
	// TLS 1.3 servers refuse a client certificate after the client's side
	// of the handshake is done: the alert arrives on the first read.
	conn.SetReadDeadline(time.Now().Add(timeout))
	if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) {
		return "TLS: " + err.Error()
	}
	return ""
}
