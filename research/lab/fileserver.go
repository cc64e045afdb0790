package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// smallSize is the body of GET /small: what an idle connection (a
// websocket's heartbeat, a database query) asks now and then.
const smallSize = 2 << 10

// maxBytes bounds GET /bytes.
const maxBytes = 64 << 20

// fileServer is a server's HTTP service: GET /file returns the file, GET
// /small a few bytes, and both name the server in X-Server. It listens on
// all addresses (health checks reach it at the DIP, clients at the VIP), or
// only on the VIP, the usual setup of a direct-server-return service. It
// accepts MPTCP.
type fileServer struct {
	ns       *netlab.Namespace
	name     string
	addr     netip.AddrPort
	srv      *http.Server
	sent     atomic.Uint64 // body bytes written: the server's traffic
	requests atomic.Uint64

	mu sync.Mutex
	ln net.Listener // nil while the service refuses new connections
}

// serveFiles starts the service on addr (port 80 of the unspecified
// address for all addresses, or of the VIP).
func serveFiles(ns *netlab.Namespace, name string, size int, addr netip.AddrPort) (*fileServer, error) {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	fs := &fileServer{ns: ns, name: name, addr: addr}
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Server", name)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		fs.requests.Add(1)
		// Count as the bytes go, so per-server throughput is smooth.
		for off := 0; off < len(body); off += 64 << 10 {
			n, err := w.Write(body[off:min(off+64<<10, len(body))])
			fs.sent.Add(uint64(n))
			if err != nil {
				return
			}
		}
	})
	// GET /bytes?n=N: N bytes (≤ maxBytes), the heavy-tailed downloads of
	// the AWFD experiment (awfd_flows.go).
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 || n > maxBytes {
			http.Error(w, "n must be 0–64 MiB", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Server", name)
		w.Header().Set("Content-Length", strconv.Itoa(n))
		fs.requests.Add(1)
		for off := 0; off < n; {
			k := min(n-off, len(body), 64<<10)
			m, err := w.Write(body[:k])
			fs.sent.Add(uint64(m))
			if err != nil {
				return
			}
			off += k
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Server", name)
		w.Header().Set("Content-Length", strconv.Itoa(smallSize))
		fs.requests.Add(1)
		n, _ := w.Write(body[:min(smallSize, len(body))])
		fs.sent.Add(uint64(n))
	})
	// Idle persistent connections may wait longer than the default
	// keep-alive between two requests: the server must not close them.
	fs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: time.Hour}
	if err := fs.listen(); err != nil {
		return nil, err
	}
	return fs, nil
}

// listen opens the listening socket and serves it.
func (fs *fileServer) listen() error {
	var l net.Listener
	err := fs.ns.Do(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(true)
		network := "tcp4"
		if fs.addr.Addr().Is6() {
			network = "tcp6" // the IPv6 lab's servers (family.go)
		}
		l, err = lc.Listen(context.Background(), network, fs.addr.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: HTTP listener on %v: %w", fs.name, fs.addr, err)
	}
	fs.mu.Lock()
	fs.ln = l
	fs.mu.Unlock()
	go fs.srv.Serve(l)
	return nil
}

// refuse closes the listening socket: new connections (and health probes)
// are refused, established ones keep being served, the way a service whose
// health endpoint fails or that is overloaded behaves while its machine,
// link and agent stay up.
func (fs *fileServer) refuse() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.ln == nil {
		return errors.New("its service already refuses connections")
	}
	err := fs.ln.Close()
	fs.ln = nil
	return err
}

// accept listens again after refuse.
func (fs *fileServer) accept() error {
	fs.mu.Lock()
	open := fs.ln != nil
	fs.mu.Unlock()
	if open {
		return errors.New("its service already accepts connections")
	}
	return fs.listen()
}

func (fs *fileServer) close() { fs.srv.Close() }
