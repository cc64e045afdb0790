package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// StatusPath is where a daemon serves what its data plane holds, as JSON
// (`beamer mux status`, `beamer agent status` read it).
const StatusPath = "/status"

// HandleStatus serves read()'s value as JSON on StatusPath.
func (s *Server) HandleStatus(read func() (any, error)) {
	s.mux.HandleFunc(StatusPath, func(w http.ResponseWriter, _ *http.Request) {
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

// HandleFunc serves h on path beside /metrics (a daemon's own local API,
// e.g. the mux's Prism keep-alive bits).
func (s *Server) HandleFunc(path string, h http.HandlerFunc) { s.mux.HandleFunc(path, h) }
