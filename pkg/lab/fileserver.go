package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
)

// fileServer is a server's HTTP service: GET /file returns the file and
// names the server in X-Server. It listens on all addresses, so the
// controller's health checks reach it at the DIP and clients at the VIP,
// and accepts MPTCP.
type fileServer struct {
	srv      *http.Server
	sent     atomic.Uint64 // body bytes written: the server's traffic
	requests atomic.Uint64
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
	fs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go fs.srv.Serve(l)
	return fs, nil
}

func (fs *fileServer) close() { fs.srv.Close() }
