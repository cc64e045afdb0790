package nodeauth

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Role is what a certificate lets its holder do.
type Role string

// The roles of Beamer's node identities.
const (
	RoleController Role = "controller"
	RoleMux        Role = "mux"
	RoleAgent      Role = "agent"
	// The management API's callers (pkg/controlplane/mgmtapi): read may list, show,
	// look up and watch; admin may also change state.
	RoleRead  Role = "read"
	RoleAdmin Role = "admin"
)

// URIPrefix starts the URI SAN that names a certificate's role.
const URIPrefix = "beamer://role/"

// RoleOf reads the role of a certificate: its one beamer://role/ URI SAN.
func RoleOf(c *x509.Certificate) (Role, error) {
	var roles []Role
	for _, u := range c.URIs {
		if s := u.String(); strings.HasPrefix(s, URIPrefix) {
			roles = append(roles, Role(strings.TrimPrefix(s, URIPrefix)))
		}
	}
	switch {
	case len(roles) == 0:
		return "", fmt.Errorf("certificate %q names no role (URI SAN %sROLE; scripts/store-certs.sh NAME=ROLE)", c.Subject.CommonName, URIPrefix)
	case len(roles) > 1:
		return "", fmt.Errorf("certificate %q names %d roles", c.Subject.CommonName, len(roles))
	}
	switch roles[0] {
	case RoleController, RoleMux, RoleAgent, RoleRead, RoleAdmin:
		return roles[0], nil
	}
	return "", fmt.Errorf("certificate %q: unknown role %q", c.Subject.CommonName, roles[0])
}

// CallerRole is the role of a request's verified client certificate; ok
// is false on a plaintext request.
func CallerRole(r *http.Request) (role Role, ok bool, err error) {
	if r.TLS == nil {
		return "", false, nil
	}
	if len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", true, fmt.Errorf("no verified client certificate")
	}
	role, err = RoleOf(r.TLS.VerifiedChains[0][0])
	return role, true, err
}

// Only serves h to callers whose certificate has one of roles and answers
// 403 to any other. A plaintext request passes: a plaintext node API is
// only served on loopback or with --insecure (CheckPlaintext).
func Only(h http.Handler, roles ...Role) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		role, tls, err := CallerRole(r)
		if tls && (err != nil || !slices.Contains(roles, role)) {
			why := fmt.Sprintf("role %q", role)
			if err != nil {
				why = err.Error()
			}
			http.Error(w, fmt.Sprintf("forbidden: %s may not call %s (allowed: %v)", why, r.URL.Path, roles), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
