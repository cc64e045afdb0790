package mgmtapi

import (
	"crypto/tls"

	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
)

// ClientTLS is a caller's TLS towards the API: it presents the caller's
// certificate (role read or admin; a standby forwarding: controller) and
// accepts only a server certificate the CA signed with role controller
// for the address dialled.
func ClientTLS(f nodeauth.Files) (*tls.Config, error) {
	return nodeauth.PeerConfig(f, "the API", nodeauth.RoleController)
}
