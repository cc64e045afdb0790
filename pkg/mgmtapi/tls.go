package mgmtapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/beamer-lb/beamer/pkg/nodeauth"
)

// ClientTLS is a caller's TLS towards the API: it presents the caller's
// certificate (role read or admin; a standby forwarding: controller) and
// accepts only a server certificate the CA signed with role controller
// for the address dialled.
func ClientTLS(f nodeauth.Files) (*tls.Config, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, errors.New("mutual TLS needs a CA, a certificate and its key (all three)")
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s, key %s: %w", f.Cert, f.Key, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the API presented no certificate")
			}
			role, err := nodeauth.RoleOf(cs.PeerCertificates[0])
			if err != nil {
				return err
			}
			if role != nodeauth.RoleController {
				return fmt.Errorf("the API's certificate has role %q, want controller", role)
			}
			return nil
		}}, nil
}
