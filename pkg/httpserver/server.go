package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is one bounded HTTP server on one or more listeners.
type Server struct {
	name    string
	lim     Limits
	srv     *http.Server
	tls     *tls.Config
	sources *SourceLimiter
	logs    *LineLimiter

	mu        sync.Mutex
	listeners []*budgetListener
}

// New builds a server named name (for log lines) serving h within lim;
// tlsConf nil serves plaintext.
func New(name string, h http.Handler, lim Limits, tlsConf *tls.Config) *Server {
	lim = lim.filled()
	s := &Server{name: name, lim: lim, tls: tlsConf, logs: NewLineLimiter(10 * time.Second),
		sources: NewSourceLimiter(lim.PerSourceRate, lim.PerSourceBurst, lim.MaxSources)}
	s.srv = &http.Server{
		Handler:           s.sources.wrap(h, lim.Exempt, lim.MaxBodyBytes, nil),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		TLSConfig:         tlsConf,
		ErrorLog:          log.New(errorLogWriter{name: name, lim: s.logs}, "", 0),
	}
	return s
}

// Listen opens addr (in the caller's network namespace) and serves on it.
func (s *Server) Listen(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err // the caller names the listener
	}
	s.Serve(l)
	return l.Addr(), nil
}

// Serve serves on l, within the connection budgets, until Close.
func (s *Server) Serve(l net.Listener) {
	b := newBudgetListener(l, s.lim, func() {
		s.logs.Log(slog.Default(), slog.LevelWarn, "refused", "connection over its budget closed (flood or too many callers)", "server", s.name)
	})
	s.mu.Lock()
	s.listeners = append(s.listeners, b)
	s.mu.Unlock()
	var inner net.Listener = b
	if s.tls != nil {
		inner = tls.NewListener(b, s.tls)
	}
	go func() {
		if err := s.srv.Serve(inner); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logs.Log(slog.Default(), slog.LevelWarn, "serve", "stopped serving", "server", s.name, "error", err)
		}
	}()
}

// TLS reports whether the server asks for TLS.
func (s *Server) TLS() bool { return s.tls != nil }

// Close stops serving: listeners close, requests in flight get 2 s.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Open reports the connections held across listeners: remote, loopback and
// distinct remote sources; Sources the request-rate table's size (tests
// and the flood checks read them).
func (s *Server) Open() (remote, loopback, sources int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		r, lo, src := l.open()
		remote, loopback, sources = remote+r, loopback+lo, sources+src
	}
	return
}

// Sources is the size of the per-source request-rate table.
func (s *Server) Sources() int { return s.sources.size() }

// Addr is the first listener's address (nil before Listen or Serve).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}
