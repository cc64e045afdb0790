package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
)

// fileServer is a server's HTTP service: GET /file returns size bytes and
// names the server in X-Server. It listens on all addresses, so the
// controller's health checks reach it at the DIP and clients at the VIP.
type fileServer struct {
	srv    *http.Server
	served atomic.Uint64
}

func serveFiles(ns *netlab.Namespace, name string, size int) (*fileServer, error) {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	fs := &fileServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Server", name)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
		fs.served.Add(1)
	})
	var l net.Listener
	err := ns.Do(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(true)
		l, err = lc.Listen(context.Background(), "tcp4", ":80")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: HTTP listener: %w", name, err)
	}
	fs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go fs.srv.Serve(l)
	return fs, nil
}

func (fs *fileServer) close() { fs.srv.Close() }

// ConnStats is what one client connection saw.
type ConnStats struct {
	Requests uint64
	Broken   bool
	Error    string
	Servers  map[string]uint64 // responses by server
}

// Load is a set of persistent HTTP connections, each downloading the file in
// a loop over its one TCP connection until stopped or broken.
type Load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []*ConnStats
}

// StartLoad opens perClient persistent connections from every client.
func (l *Lab) StartLoad(perClient int, timeout time.Duration) *Load {
	ctx, cancel := context.WithCancel(context.Background())
	ld := &Load{cancel: cancel}
	url := fmt.Sprintf("http://%s/file", VIP)
	for _, c := range l.clients {
		for j := 0; j < perClient; j++ {
			st := &ConnStats{Servers: map[string]uint64{}}
			ld.conns = append(ld.conns, st)
			ld.wg.Add(1)
			go ld.run(ctx, c, url, l.opts.FileSize, timeout, st)
		}
	}
	return ld
}

func (ld *Load) run(ctx context.Context, ns *netlab.Namespace, url string, size int, timeout time.Duration, st *ConnStats) {
	defer ld.wg.Done()
	dials := 0
	tr := &http.Transport{
		MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ld.mu.Lock()
			dials++
			ld.mu.Unlock()
			var c net.Conn
			err := ns.Do(func() (err error) {
				d := net.Dialer{Timeout: timeout}
				c, err = d.DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: timeout}
	fail := func(err error) {
		ld.mu.Lock()
		st.Broken, st.Error = true, err.Error()
		ld.mu.Unlock()
	}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fail(err)
			return
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		if err == nil && n != int64(size) {
			err = fmt.Errorf("short body: %d of %d bytes", n, size)
		}
		if err != nil {
			fail(err)
			return
		}
		ld.mu.Lock()
		st.Requests++
		st.Servers[resp.Header.Get("X-Server")]++
		redialed := dials > 1
		ld.mu.Unlock()
		if redialed {
			// The server closed the persistent connection: that is a
			// broken connection from the client's point of view.
			fail(fmt.Errorf("connection closed by the server after %d requests", st.Requests))
			return
		}
	}
}

// Summary of a load.
type Summary struct {
	Connections int
	Broken      int
	Requests    uint64
	Errors      []string
	Servers     map[string]uint64
}

// Stop ends the load and summarises it.
func (ld *Load) Stop() Summary {
	ld.cancel()
	ld.wg.Wait()
	return ld.Snapshot()
}

// Snapshot summarises the load so far.
func (ld *Load) Snapshot() Summary {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	s := Summary{Connections: len(ld.conns), Servers: map[string]uint64{}}
	for _, c := range ld.conns {
		s.Requests += c.Requests
		if c.Broken {
			s.Broken++
			if len(s.Errors) < 5 {
				s.Errors = append(s.Errors, c.Error)
			}
		}
		for k, v := range c.Servers {
			s.Servers[k] += v
		}
	}
	return s
}

// Probe opens n new connections, one request each, and counts which server
// answered: where new connections land now.
func (l *Lab) Probe(n int, timeout time.Duration) (map[string]int, int) {
	by, failed := map[string]int{}, 0
	url := fmt.Sprintf("http://%s/file", VIP)
	for i := 0; i < n; i++ {
		c := l.clients[i%len(l.clients)]
		tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := c.Do(func() (err error) {
				d := net.Dialer{Timeout: timeout}
				conn, err = d.DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		}}
		resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Get(url)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			failed++
			continue
		}
		by[resp.Header.Get("X-Server")]++
	}
	return by, failed
}
