package agentapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/vishvananda/netns"
)

// Bounds on what one caller can make the agent do.
const (
	DefaultProbeTimeout = time.Second
	MaxProbeTimeout     = 10 * time.Second
	MaxBuckets          = 1 << 24 // as forwarding.Instance
)

// Options configure the API of one agent.
type Options struct {
	// VIPs the agent serves: the only addresses it probes or reports.
	VIPs []netip.Addr
	// Netns is the server's network namespace, where probes connect and
	// sockets are read. Zero: the namespace NewServer runs in.
	Netns netns.NsHandle
	// MaxProbes bounds health probes in flight (default 32); more get 503.
	MaxProbes int
	// Capacity says what GET /v1/capacity measures; nil (or no Iface):
	// the endpoint answers 404.
	Capacity *CapacityOptions
	// Routes are the strategies' own paths (agentdspi), by pattern such as
	// "PUT /v1/cheetah" (routes.go); a write among them takes pushes from
	// callers in PushFrom only (Server.PushAllowed).
	Routes   map[string]Route
	PushFrom []netip.Prefix
	// ServerID and Params are the agent's configuration, checked against
	// what a health probe expects (Expect); zero/absent are not checked.
	ServerID uint16
	Params   map[netip.Addr]VIPParams
	// OnMismatch, if set, hears every refused probe (the agent logs it).
	OnMismatch func(vip netip.Addr, reason string)
	// TLS, if set, is the API's mutual TLS (nodeauth.ServerConfig): only
	// a controller certificate may call it. Nil: plaintext, which the
	// agent allows on loopback or with --insecure only.
	TLS *tls.Config
}

// Server answers the API.
type Server struct {
	vips   []netip.Addr
	ns     netns.NsHandle
	ownNS  bool
	probes chan struct{}
	dumps  chan struct{}
	// sampler measures capacity (capacity.go); nil when not configured.
	sampler *sampler
	// routes and pushFrom: the strategies' paths (routes.go).
	routes     map[string]Route
	pushFrom   []netip.Prefix
	serverID   uint16
	params     map[netip.Addr]VIPParams
	onMismatch func(netip.Addr, string)
}

// NewServer returns the API of an agent serving o.VIPs.
func NewServer(o Options) (*Server, error) {
	if len(o.VIPs) == 0 {
		return nil, errors.New("agent API: no VIP")
	}
	if o.MaxProbes <= 0 {
		o.MaxProbes = 32
	}
	s := &Server{vips: slices.Clone(o.VIPs), ns: o.Netns, probes: make(chan struct{}, o.MaxProbes), dumps: make(chan struct{}, 2),
		routes: maps.Clone(o.Routes), pushFrom: slices.Clone(o.PushFrom),
		serverID: o.ServerID, params: o.Params, onMismatch: o.OnMismatch}
	if s.ns <= 0 { // unset (fd 0 is never a namespace)
		h, err := netns.Get()
		if err != nil {
			return nil, fmt.Errorf("agent API: own network namespace: %w", err)
		}
		s.ns, s.ownNS = h, true
	}
	if o.Capacity != nil && o.Capacity.Iface != "" {
		s.sampler = newSampler(*o.Capacity, s.ns)
	}
	return s, nil
}

// Close releases the namespace handle NewServer took.
func (s *Server) Close() error {
	if s.ownNS {
		return s.ns.Close()
	}
	return nil
}

// Handler serves the API paths. Every one is the controller's: probes,
// connection lists, signatures, capacity and the strategies' routes, such
// as Cheetah's key push (nodeauth.Only; docs/operations.md, "Trust
// boundaries").
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, s.health)
	mux.HandleFunc("GET "+ConnectionsPath, s.connections)
	mux.HandleFunc("GET "+CapacityPath, s.capacity)
	mux.HandleFunc("GET "+SignaturesPath, s.signatures)
	for pattern, route := range s.routes {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { route(s, w, r) })
	}
	return nodeauth.Only(mux, nodeauth.RoleController)
}

// Limits bound the agent API (httpserver): the controller is one source
// probing every VIP port of the server every few seconds.
func Limits() httpserver.Limits {
	l := httpserver.Defaults()
	l.MaxBodyBytes = MaxPush
	return l
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, format string, a ...any) {
	writeJSON(w, code, ErrorReport{Error: fmt.Sprintf(format, a...)})
}

// vip reads the vip parameter and checks that the agent serves it.
func (s *Server) vip(r *http.Request) (netip.Addr, error) {
	v, err := netip.ParseAddr(r.URL.Query().Get("vip"))
	if err != nil || v.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("vip %q is not an IPv4 or IPv6 address", r.URL.Query().Get("vip"))
	}
	if !slices.Contains(s.vips, v) {
		return netip.Addr{}, fmt.Errorf("vip %v is not served by this agent (its VIPs: %v)", v, s.vips)
	}
	return v, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	vip, err := s.vip(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	q := r.URL.Query()
	port, err := strconv.ParseUint(q.Get("port"), 10, 16)
	if err != nil || port == 0 {
		fail(w, http.StatusBadRequest, "port %q must be a number in 1–65535", q.Get("port"))
		return
	}
	timeout := DefaultProbeTimeout
	if t := q.Get("timeout_ms"); t != "" {
		ms, err := strconv.ParseUint(t, 10, 32)
		if err != nil || ms == 0 || time.Duration(ms)*time.Millisecond > MaxProbeTimeout {
			fail(w, http.StatusBadRequest, "timeout_ms %q must be in 1–%d", t, MaxProbeTimeout.Milliseconds())
			return
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	if why, err := s.mismatch(vip, q); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	} else if why != "" {
		if s.onMismatch != nil {
			s.onMismatch(vip, why)
		}
		writeJSON(w, http.StatusOK, HealthReport{VIP: vip, Port: uint16(port), Mismatch: why})
		return
	}
	select {
	case s.probes <- struct{}{}:
		defer func() { <-s.probes }()
	default:
		fail(w, http.StatusServiceUnavailable, "%d probes in flight already", cap(s.probes))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	addr := netip.AddrPortFrom(vip, uint16(port))
	start := time.Now()
	var c net.Conn
	err = inNamespace(s.ns, func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr.String())
		return err
	})
	rep := HealthReport{VIP: vip, Port: uint16(port), OK: err == nil, Micros: time.Since(start).Microseconds()}
	if err != nil {
		rep.Error = err.Error()
	} else {
		c.Close()
	}
	writeJSON(w, http.StatusOK, rep)
}

// mismatch compares what the probe expects (server_id, buckets, window_s)
// with the agent's configuration: "" when they agree or nothing is asked.
func (s *Server) mismatch(vip netip.Addr, q url.Values) (string, error) {
	var why []string
	if v := q.Get("server_id"); v != "" {
		id, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return "", fmt.Errorf("server_id %q must be a number in 1–65535", v)
		}
		if s.serverID != 0 && uint16(id) != s.serverID {
			why = append(why, fmt.Sprintf("this agent is server %d, the controller probes it as server %d (agent --id)", s.serverID, id))
		}
	}
	p, known := s.params[vip]
	if v := q.Get("buckets"); v != "" {
		b, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return "", fmt.Errorf("buckets %q must be a number", v)
		}
		if known && p.Buckets != 0 && uint32(b) != p.Buckets {
			why = append(why, fmt.Sprintf("%v has %d buckets here, %d in the instance (agent --vip %v:%d)", vip, p.Buckets, b, vip, b))
		}
	}
	if v := q.Get("window_s"); v != "" {
		sec, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return "", fmt.Errorf("window_s %q must be a number of seconds", v)
		}
		if want := time.Duration(sec) * time.Second; known && p.Window/time.Second != want/time.Second {
			why = append(why, fmt.Sprintf("%v has a chaining window of %v here, %v in the instance", vip, p.Window, want))
		}
	}
	return strings.Join(why, "; "), nil
}

func (s *Server) connections(w http.ResponseWriter, r *http.Request) {
	vip, err := s.vip(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	b := r.URL.Query().Get("buckets")
	n, err := strconv.ParseUint(b, 10, 32)
	if err != nil || n == 0 || n > MaxBuckets {
		fail(w, http.StatusBadRequest, "buckets %q must be the instance's bucket count, 1–%d", b, MaxBuckets)
		return
	}
	select {
	case s.dumps <- struct{}{}:
		defer func() { <-s.dumps }()
	case <-r.Context().Done():
		return
	}
	rep, err := countConnections(s.ns, vip, uint32(n))
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// Endpoint is a running API listener.
type Endpoint struct {
	srv  *httpserver.Server
	addr net.Addr
	s    *Server
}

// Serve starts serving the API of o on addr (host:port; ":9300" for all
// addresses). The listener is opened in the caller's network namespace.
func Serve(addr string, o Options) (*Endpoint, error) {
	s, err := NewServer(o)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{s: s, srv: httpserver.New("agent API", s.Handler(), Limits(), o.TLS)}
	if e.addr, err = e.srv.Listen(addr); err != nil {
		s.Close()
		return nil, fmt.Errorf("agent API listener: %w", err)
	}
	return e, nil
}

// Listen serves the same API on one more address: a server of an IPv4
// and an IPv6 instance is probed at its DIP of each family. Close stops
// every listener.
func (e *Endpoint) Listen(addr string) error {
	if _, err := e.srv.Listen(addr); err != nil {
		return fmt.Errorf("agent API listener: %w", err)
	}
	return nil
}

// Addr is the address served (useful with port 0).
func (e *Endpoint) Addr() net.Addr { return e.addr }

// HTTP is the bounded server (tests read its connection counts).
func (e *Endpoint) HTTP() *httpserver.Server { return e.srv }

// Close stops serving.
func (e *Endpoint) Close() error {
	err := e.srv.Close()
	e.s.Close()
	return err
}
