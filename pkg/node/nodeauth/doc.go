// Package nodeauth is the trust boundary of the node APIs: the agent API
// (port 9300 on each server) and the mux node API (`beamer mux --api`).
// Both speak mutual TLS with certificates of one CA (the store's,
// scripts/store-certs.sh), and authorize by the role the caller's
// certificate carries as a URI SAN, beamer://role/ROLE:
//
//	controller   may call every endpoint of both APIs (the only caller)
//	mux, agent   identities of nodes: they serve, they call nothing
//
// A server requires and verifies a client certificate during the
// handshake (no certificate: no HTTP at all), then Only answers 403 to a
// verified certificate of another role. A client (the controller) verifies
// the node's certificate against the CA and the address it dialled (an IP
// SAN), and that it carries a node role.
//
// A node API without TLS is allowed on loopback only, or anywhere with
// --insecure (CheckPlaintext), as the store's TLS rule.
package nodeauth
