// Package metrics serves a daemon's Prometheus metrics and health check:
// GET /metrics and GET /healthz on one listen address.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the HTTP endpoint of one daemon.
type Server struct {
	srv *http.Server
	l   net.Listener
	mux *http.ServeMux
}

// Serve starts serving reg on addr. healthy returns nil while the daemon
// forwards traffic; its error is the body of a 503 otherwise.
//
// Every daemon's registry also gets the standard collectors: Go runtime
// (go_*), process (process_*) and build info (go_build_info).
func Serve(addr string, reg *prometheus.Registry, healthy func() error) (*Server, error) {
	if err := RegisterStandard(reg); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, l: l, mux: mux}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed after start; the health check of the caller still reports state
		}
	}()
	return s, nil
}

// RegisterStandard adds the Go runtime, process and build-info collectors.
func RegisterStandard(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// Addr is the address served (useful with port 0).
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// CounterCollector exposes a set of named counters read on each scrape as one
// metric with a label, e.g. beamer_mux_packets_total{decision="fwd_bucket"}.
type CounterCollector struct {
	desc  *prometheus.Desc
	label string
	read  func() (map[string]uint64, error)
}

// NewCounterCollector describes the metric name with one label.
func NewCounterCollector(name, help, label string, read func() (map[string]uint64, error)) *CounterCollector {
	return &CounterCollector{desc: prometheus.NewDesc(name, help, []string{label}, nil), label: label, read: read}
}

// Describe implements prometheus.Collector.
func (c *CounterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *CounterCollector) Collect(ch chan<- prometheus.Metric) {
	vals, err := c.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for k, v := range vals {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(v), k)
	}
}
