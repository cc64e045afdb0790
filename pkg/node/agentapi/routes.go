package agentapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
)

// Route is a strategy's handler on the agent API (Options.Routes), given
// the server for what every such handler needs: who may push, which VIPs
// the agent serves, its namespace, its connection counts.
type Route func(s *Server, w http.ResponseWriter, r *http.Request)

// MaxPush bounds a pushed body (a Cheetah key push is ~200 bytes).
const MaxPush = 4 << 10

// PushAllowed: only callers from the Options.PushFrom prefixes may push
// (the peer of an accepted TCP connection: not spoofable off path); what
// names the pushed thing in the refusal.
func (s *Server) PushAllowed(r *http.Request, what string) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	a = a.Unmap()
	if slices.ContainsFunc(s.pushFrom, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return nil
	}
	return fmt.Errorf("%v may not push %s (allowed: %v)", a, what, s.pushFrom)
}

// Serves says whether vip is one of the agent's VIPs, and lists them.
func (s *Server) Serves(vip netip.Addr) (bool, []netip.Addr) {
	return slices.Contains(s.vips, vip), slices.Clone(s.vips)
}

// InNamespace runs fn in the server's network namespace (where its
// interface is found by name).
func (s *Server) InNamespace(fn func() error) error { return inNamespace(s.ns, fn) }

// Connections counts the live TCP connections to vip in the server's
// namespace (sock_diag; at most two dumps at a time); ctx ends the wait
// for a turn.
func (s *Server) Connections(ctx context.Context, vip netip.Addr) (uint32, error) {
	select {
	case s.dumps <- struct{}{}:
		defer func() { <-s.dumps }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	rep, err := countConnections(s.ns, vip, 1)
	if err != nil {
		return 0, err
	}
	return rep.Total, nil
}

// WriteJSON answers v with code.
func WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }

// Fail answers an ErrorReport with code.
func Fail(w http.ResponseWriter, code int, format string, a ...any) { fail(w, code, format, a...) }
