package metrics

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// /status (tables, owners, connections) answers callers on the daemon's
// own host only: loopback, or a caller whose address is the one it dialled.
func TestStatusSameHostOnly(t *testing.T) {
	s := &Server{mux: http.NewServeMux()}
	s.HandleStatus(func() (any, error) { return map[string]int{"buckets": 1}, nil })
	for _, c := range []struct {
		remote, local string
		want          int
	}{
		{"127.0.0.1:40000", "127.0.0.1:9100", http.StatusOK},
		{"[::1]:40000", "[::1]:9100", http.StatusOK},
		{"198.18.0.1:40000", "198.18.0.1:9100", http.StatusOK}, // the host itself, at its own address
		{"198.18.0.5:40000", "198.18.0.1:9100", http.StatusForbidden},
		{"[2001:db8::5]:40000", "[2001:db8::1]:9100", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, StatusPath, nil)
		req.RemoteAddr = c.remote
		local, err := net.ResolveTCPAddr("tcp", c.local)
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		w := httptest.NewRecorder()
		s.mux.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s → %s: %d, want %d", c.remote, c.local, w.Code, c.want)
		}
	}
}
