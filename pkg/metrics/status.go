package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// StatusPath is where a daemon serves what its data plane holds, as JSON
// (`beamer mux status`, `beamer agent status` read it).
const StatusPath = "/status"

// HandleStatus serves read()'s value as JSON on StatusPath, to callers on
// the same host only (loopback, or the address they dialled is their own:
// `beamer mux status` and `beamer agent status` run beside the daemon).
// The status lists tables, owners and connections: the network has no
// business reading it from a plaintext address.
func (s *Server) HandleStatus(read func() (any, error)) {
	s.mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, r *http.Request) {
		if !SameHost(r) {
			http.Error(w, "status is served to callers on this host only (run the status command on the host)", http.StatusForbidden)
			return
		}
		v, err := read()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	})
}

// FetchStatus reads a daemon's status from its metrics address into out.
func FetchStatus(ctx context.Context, addr string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+StatusPath, nil)
	if err != nil {
		return err
	}
	// Dial here, in the caller's goroutine, and hand the connection to the
	// client: a caller inside a network namespace (a locked thread) then
	// reaches the daemon of that namespace, not the transport's thread's.
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("status from %s (the daemon's --metrics address): %w", addr, err)
	}
	client := http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("status from %s (the daemon's --metrics address): %w", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status from %s: %s: %s", addr, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("status from %s: %w", addr, err)
	}
	return nil
}

// SameHost reports whether the caller of r runs on this host: its address
// is a loopback one or the very address it connected to.
func SameHost(r *http.Request) bool {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if peer.Addr().Unmap().IsLoopback() {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	l, err := netip.ParseAddrPort(local.String())
	return err == nil && l.Addr().Unmap() == peer.Addr().Unmap()
}
