package httpserver

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// budgetListener admits a connection only within the connection budgets of
// Limits (global, per source, loopback) and closes the others at once.
// Closing instead of not accepting keeps the kernel's backlog short, so a
// caller within budget is accepted without waiting behind a flood. The
// table of sources only holds sources with a connection open, so it is
// never larger than MaxConns + LocalConns. The per-source bound applies to
// loopback peers too (127.0.0.2 is not 127.0.0.1).
type budgetListener struct {
	net.Listener
	max, perSource, local int

	mu        sync.Mutex
	remote    int
	loopback  int
	perSrc    map[netip.Addr]int
	refused   atomic.Uint64
	onRefused func()
}

// LimitConns bounds l to the connection budgets of lim (MaxConns,
// PerSourceConns, LocalConns; zero fields take Defaults'): the listener of
// every server here, and of the management API (pkg/controlplane/mgmtapi).
func LimitConns(l net.Listener, lim Limits) net.Listener {
	return newBudgetListener(l, lim.filled(), nil)
}

func newBudgetListener(l net.Listener, lim Limits, onRefused func()) *budgetListener {
	return &budgetListener{Listener: l, max: lim.MaxConns, perSource: lim.PerSourceConns, local: lim.LocalConns,
		perSrc: map[netip.Addr]int{}, onRefused: onRefused}
}

func (b *budgetListener) Accept() (net.Conn, error) {
	for {
		c, err := b.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := SourceOf(c.RemoteAddr())
		if b.admit(src) {
			return &budgetConn{Conn: c, l: b, src: src}, nil
		}
		b.refused.Add(1)
		if b.onRefused != nil {
			b.onRefused()
		}
		c.Close()
	}
}

func (b *budgetListener) admit(src netip.Addr) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perSrc[src] >= b.perSource {
		return false
	}
	if src.IsLoopback() {
		if b.loopback >= b.local {
			return false
		}
		b.loopback++
	} else {
		if b.remote >= b.max {
			return false
		}
		b.remote++
	}
	b.perSrc[src]++
	return true
}

func (b *budgetListener) release(src netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if src.IsLoopback() {
		b.loopback--
	} else {
		b.remote--
	}
	if b.perSrc[src]--; b.perSrc[src] <= 0 {
		delete(b.perSrc, src)
	}
}

// open is the number of connections held (tests).
func (b *budgetListener) open() (remote, loopback, sources int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remote, b.loopback, len(b.perSrc)
}

// budgetConn gives its slot back once, on the first Close.
type budgetConn struct {
	net.Conn
	l    *budgetListener
	src  netip.Addr
	once sync.Once
}

func (c *budgetConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}

// SourceOf is the peer's address without port and IPv4-mapped prefix; an
// address that cannot be read counts as one unknown source.
func SourceOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
