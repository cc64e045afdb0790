// Package metrics serves a daemon's Prometheus metrics and health check:
// GET /metrics and GET /healthz on one listen address.
package metrics

import (
	"fmt"
	"net"
	"net/http"

	"github.com/beamer-lb/beamer/pkg/httpserver"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the HTTP endpoint of one daemon.
type Server struct {
	srv  *httpserver.Server
	addr net.Addr
	mux  *http.ServeMux
}

// Limits bound a --metrics address (httpserver): fewer connections than a
// node API (a scraper or two and a health checker), /healthz exempt from
// the request rate, and loopback callers (a local health checker) with a
// connection budget of their own, so a flood from the network cannot make
// a forwarding node look dead.
func Limits() httpserver.Limits {
	l := httpserver.Defaults()
	l.MaxConns, l.PerSourceConns, l.LocalConns = 128, 16, 32
	l.PerSourceRate, l.PerSourceBurst = 50, 100
	l.MaxBodyBytes = 1 << 10 // nothing here reads a body
	l.Exempt = []string{HealthPath}
	return l
}

// HealthPath is the health check's path.
const HealthPath = "/healthz"

// Serve starts serving reg on addr. healthy returns nil while the daemon
// forwards traffic; its error is the body of a 503 otherwise.
//
// Every daemon's registry also gets the standard collectors: Go runtime
// (go_*), process (process_*) and build info (go_build_info).
func Serve(addr string, reg *prometheus.Registry, healthy func() error) (*Server, error) {
	if err := RegisterStandard(reg); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		if err := healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	s := &Server{srv: httpserver.New("metrics", mux, Limits(), nil), mux: mux}
	a, err := s.srv.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	s.addr = a
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
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops serving.
func (s *Server) Close() error { return s.srv.Close() }

// HTTP is the bounded server (tests read its connection counts).
func (s *Server) HTTP() *httpserver.Server { return s.srv }

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
