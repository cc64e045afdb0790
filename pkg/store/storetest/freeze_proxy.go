package storetest

import (
	"net"
	"sync"
	"testing"
)

// FreezeProxy forwards TCP connections from a loopback port to a store
// server. Frozen, it forwards nothing either way and holds new
// connections unanswered: to the server, the client behind it looks like
// a paused process (SIGSTOP): no lease keep-alive, no session ping, and
// whatever the client sends is delivered only when the proxy thaws.
type FreezeProxy struct {
	Addr   string // where clients connect
	target string
	ln     net.Listener

	mu     sync.Mutex
	frozen bool
	thawed *sync.Cond
	conns  []net.Conn
}

// StartFreezeProxy proxies a free 127.0.0.1 port to target until the test
// ends.
func StartFreezeProxy(t testing.TB, target string) *FreezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FreezeProxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.thawed = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Freeze stops forwarding; Thaw resumes it, delivering what was held.
func (p *FreezeProxy) Freeze() { p.set(true) }

// Thaw resumes forwarding.
func (p *FreezeProxy) Thaw() { p.set(false) }

func (p *FreezeProxy) set(frozen bool) {
	p.mu.Lock()
	p.frozen = frozen
	p.mu.Unlock()
	p.thawed.Broadcast()
}

// wait blocks while the proxy is frozen.
func (p *FreezeProxy) wait() {
	p.mu.Lock()
	for p.frozen {
		p.thawed.Wait()
	}
	p.mu.Unlock()
}

func (p *FreezeProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *FreezeProxy) serve(c net.Conn) {
	p.wait()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go p.pipe(s, c)
	p.pipe(c, s)
}

// pipe copies from src to dst, holding each chunk while frozen.
func (p *FreezeProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection: both ends go
			return
		}
	}
}

func (p *FreezeProxy) close() {
	p.ln.Close()
	p.Thaw()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
