package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// EmbedConfig configures an etcd server run inside the beamer process.
type EmbedConfig struct {
	Dir string // data directory, created if missing
	// ClientAddr and PeerAddr are host:port to listen on; port 0 picks a
	// free port. Empty means 127.0.0.1:2379 and 127.0.0.1:2380.
	ClientAddr, PeerAddr string
	// AdvertiseAddr is the client address announced to clients and written
	// to the endpoint file; empty means ClientAddr (127.0.0.1 in place of
	// an unspecified host such as 0.0.0.0).
	AdvertiseAddr string
	// TLS, if set, serves clients over TLS (mutual TLS with a client CA).
	TLS *ServerTLS
	// StartTimeout bounds the wait for the server to become ready; 0 = 60 s.
	StartTimeout time.Duration
	// WaitForServer is, for OpenEmbedded, how long to wait for another
	// process (the controller, just started) to serve the directory before
	// starting a server here: a client such as `beamer ctl` must not serve
	// the store for the instant of its command while the controller, started
	// a moment before, connects to it and loses it when the command ends.
	WaitForServer time.Duration
	// Logger receives the server's warnings and errors (zaplog.go); nil
	// discards them.
	Logger *slog.Logger
	// ConnectOnly: OpenEmbedded connects to the server another process
	// runs for Dir, and fails rather than start one (`beamer store members`).
	ConnectOnly bool

	// A member of a replicated cluster (cluster.go); all empty is the
	// single-member store named DefaultMemberName.

	// Name is this member's name, unique in the cluster.
	Name string
	// PeerAdvertiseAddr is the peer host:port the other members dial;
	// empty means PeerAddr.
	PeerAdvertiseAddr string
	// InitialCluster lists every member at bootstrap, etcd's
	// NAME=https://HOST:PORT,… (the scheme may be left out). A member
	// restarted with data ignores it.
	InitialCluster string
	// Join makes a new member join a running cluster (etcd's cluster
	// state "existing"), after it was added (Store.AddMember).
	Join bool
	// ClusterToken tells clusters bootstrapped with the same members
	// apart; empty is etcd's default.
	ClusterToken string
	// PeerTLS, if set, is the members' mutual TLS to each other: its
	// ClientCAFile is required and signs every member's certificate.
	PeerTLS *ServerTLS
}

// Embedded is a running etcd server: the single-member store, or one
// member of a cluster.
type Embedded struct {
	etcd      *embed.Etcd
	endpoint  string
	endpoints []string // endpoint, then the other members' client URLs at start
	dir       string
	lock      *os.File     // holds LockFile's lock while the server runs
	stopping  *atomic.Bool // set by Close: etcd's errors from then on are the close's (zaplog.go)
}

// EndpointFile is written in the data directory while an embedded server
// runs, holding its client URL, so other beamer processes pointed at the
// same directory connect to it instead of starting a second server.
const EndpointFile = "beamer-endpoint"

// LockFile is locked (flock) by the process serving the directory, from
// before its server starts until it stops: a second process started at
// the same moment (`beamer controller &` then `beamer ctl …`) waits for
// the endpoint file instead of starting a server of its own.
const LockFile = "beamer-lock"

// errServing is StartEmbedded finding another process serving dir.
var errServing = errors.New("another process serves this directory (it holds " + LockFile + ")")

// lockDir takes dir's lock without waiting.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("etcdstore: %s: %w", dir, errServing)
		}
		return nil, fmt.Errorf("etcdstore: locking %s: %w", filepath.Join(dir, LockFile), err)
	}
	return f, nil
}

// StartEmbedded starts the server and waits until it serves clients.
func StartEmbedded(cfg EmbedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, errors.New("etcdstore: embedded etcd needs a data directory")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:2379"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:2380"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdstore: data directory: %w", err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			lock.Close()
		}
	}()
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	clientURL, err := listenURL(scheme, cfg.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: client address: %w", err)
	}
	advertiseURL, err := advertise(scheme, clientURL, cfg.AdvertiseAddr)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: advertised client address: %w", err)
	}
	ec := embed.NewConfig()
	ec.Dir = filepath.Join(cfg.Dir, "etcd")
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*advertiseURL}
	if cfg.TLS != nil {
		if ec.ClientTLSInfo, err = cfg.TLS.tlsInfo(); err != nil {
			return nil, err
		}
	}
	if err := configureMember(cfg, ec); err != nil { // cluster.go
		return nil, err
	}
	stopping := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapLogger(cfg.Logger, stopping))
	// Keep history short: the ring is rewritten by generations, and old
	// revisions are of no use to anyone.
	ec.AutoCompactionMode = "revision"
	ec.AutoCompactionRetention = "10000"
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: start embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdstore: embedded etcd in %s failed: %w", cfg.Dir, err)
	case <-time.After(cfg.StartTimeout):
		e.Server.Stop()
		e.Close()
		why := ""
		if cfg.InitialCluster != "" {
			why = fmt.Sprintf(" (a member is ready once a majority of %s runs and reaches it)", ec.InitialCluster)
		}
		return nil, fmt.Errorf("etcdstore: embedded etcd in %s not ready after %v%s", cfg.Dir, cfg.StartTimeout, why)
	}
	ep := advertiseURL.String()
	awaitClientURLs(e, clientURLsWait)
	eps := append([]string{ep}, otherClientURLs(e)...)
	// Written whole or not at all (a rename): another process reads it
	// at any moment. This server's URL first, then the other members'.
	tmp := filepath.Join(cfg.Dir, EndpointFile+".tmp")
	err = os.WriteFile(tmp, []byte(strings.Join(eps, "\n")+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(cfg.Dir, EndpointFile))
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("etcdstore: %w", err)
	}
	started = true
	return &Embedded{etcd: e, endpoint: ep, endpoints: eps, dir: cfg.Dir, lock: lock, stopping: stopping}, nil
}

// clientURLsWait bounds how long a member that is ready waits for the
// others' client URLs before it names them in its endpoint file.
const clientURLsWait = 2 * time.Second

// awaitClientURLs waits, at most d, until every member of the cluster has
// published its client URLs: a member publishes them through the cluster
// shortly after it starts, so one that became ready first may not know a
// member's yet (its endpoint file then missed that member: seen in CI). A
// member that is down does not publish: its URLs stay unknown after d.
func awaitClientURLs(e *embed.Etcd, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		all := true
		for _, m := range e.Server.Cluster().Members() {
			if len(m.ClientURLs) == 0 {
				all = false
			}
		}
		if all || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// otherClientURLs are the client URLs the cluster's other members
// published (none for a single member).
func otherClientURLs(e *embed.Etcd) []string {
	var urls []string
	self := e.Server.MemberID()
	for _, m := range e.Server.Cluster().Members() {
		if m.ID != self {
			urls = append(urls, m.ClientURLs...)
		}
	}
	return urls
}

// listenURL resolves port 0 to a free port now: etcd must advertise the
// exact peer URL it listens on, so it cannot be left to the kernel later.
func listenURL(scheme, addr string) (*url.URL, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if port == "0" {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		addr = l.Addr().String()
		l.Close()
	}
	return url.Parse(scheme + "://" + addr)
}

// advertise is the client URL clients are told: addr if given, else the
// listen URL with 127.0.0.1 for an unspecified host (a wildcard listener is
// reachable on loopback; remote clients are configured with a real name).
func advertise(scheme string, listen *url.URL, addr string) (*url.URL, error) {
	if addr != "" {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, err
		}
		return url.Parse(scheme + "://" + addr)
	}
	host, port, _ := net.SplitHostPort(listen.Host)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return url.Parse(scheme + "://" + net.JoinHostPort(host, port))
}

// Endpoint is the client URL of the server.
func (e *Embedded) Endpoint() string { return e.endpoint }

// Endpoints is Endpoint, then the client URLs of the cluster's other
// members known when it started: what a client lists to fail over.
func (e *Embedded) Endpoints() []string { return slices.Clone(e.endpoints) }

// Close stops the server and removes the endpoint file.
func (e *Embedded) Close() error {
	os.Remove(filepath.Join(e.dir, EndpointFile))
	e.stopping.Store(true)
	e.etcd.Close()
	return e.lock.Close() // releases the lock: the directory is free
}

// OpenEmbedded returns a Store on the embedded etcd of dir: if a beamer
// process already serves that directory (its endpoint file names a server
// that answers), it connects to it; otherwise it starts a server in this
// process, which the Store's Close stops.
func OpenEmbedded(ctx context.Context, cfg EmbedConfig, client Config) (*Store, error) {
	if cfg.TLS != nil && client.TLS == nil {
		return nil, fmt.Errorf("etcdstore: the embedded etcd of %s would serve TLS: this process needs the CA and a client certificate to use it too (store URL ca=, cert=, key=)", cfg.Dir)
	}
	waitUntil := time.Now().Add(cfg.WaitForServer)
	for {
		var running error // why the server named in the endpoint file was not used
		if b, err := os.ReadFile(filepath.Join(cfg.Dir, EndpointFile)); err == nil && len(strings.Fields(string(b))) > 0 {
			eps := strings.Fields(string(b))
			ep := eps[0]
			if strings.HasPrefix(ep, "https://") && client.TLS == nil {
				return nil, fmt.Errorf("etcdstore: the embedded etcd of %s serves TLS (%s): this process needs the CA and a client certificate (store URL ca=, cert=, key=)", cfg.Dir, ep)
			}
			s, err := openServed(ctx, eps, client)
			if err == nil {
				return s, nil
			}
			running = fmt.Errorf("the server named in %s (%s) did not answer: %w", filepath.Join(cfg.Dir, EndpointFile), ep, err)
		}
		if cfg.ConnectOnly {
			if running != nil {
				return nil, fmt.Errorf("etcdstore: %w", running)
			}
			if !time.Now().Before(waitUntil) {
				return nil, fmt.Errorf("etcdstore: no beamer process serves %s (no %s in it): start the controller, or name the members' client addresses (etcd://HOST:PORT,…)", cfg.Dir, EndpointFile)
			}
		}
		if running == nil && time.Now().Before(waitUntil) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		e, err := StartEmbedded(cfg)
		if errors.Is(err, errServing) && running == nil {
			// Another process is starting its server: its endpoint
			// file comes once it serves.
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("etcdstore: another process holds %s but its embedded etcd wrote no endpoint before the deadline: %w", filepath.Join(cfg.Dir, LockFile), ctx.Err())
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		if err != nil {
			if running != nil {
				// Most often the server is alive and refused us (TLS): say so
				// rather than only "address in use".
				return nil, fmt.Errorf("etcdstore: %v; starting a server here failed too: %w", running, err)
			}
			return nil, err
		}
		return openOn(ctx, e, client)
	}
}

// openServed connects to the server another process runs, eps[0], the
// first line of its endpoint file: that server must answer, not only
// another member (else this host's member is down and this process
// should serve it). The client lists every member, to fail over.
func openServed(ctx context.Context, eps []string, client Config) (*Store, error) {
	client.DialTimeout = 2 * time.Second
	client.Endpoints = eps
	if len(eps) > 1 {
		client.AutoSync = clusterSync
	}
	s, err := Open(ctx, client)
	if err != nil {
		return nil, err
	}
	if len(eps) > 1 {
		sctx, cancel := context.WithTimeout(ctx, client.DialTimeout)
		defer cancel()
		if _, err := s.cli.Status(sctx, eps[0]); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// clusterSync is how often a client of a cluster of embedded members
// refreshes its endpoints from the member list (joins, removals).
const clusterSync = 30 * time.Second

// openOn connects to the server this process started, listing the other
// members too: a client of a cluster fails over when its own member dies.
func openOn(ctx context.Context, e *Embedded, client Config) (*Store, error) {
	client.Endpoints = e.Endpoints()
	if len(client.Endpoints) > 1 {
		client.AutoSync = clusterSync
	}
	s, err := Open(ctx, client)
	if err != nil {
		e.Close()
		return nil, err
	}
	s.onClose = e.Close
	return s, nil
}
