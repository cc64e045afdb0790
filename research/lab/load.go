package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// LoadOptions shape the clients' traffic.
type LoadOptions struct {
	PerClient int // concurrent connections per client
	FileSize  int
	// Persistent: each connection is opened once and downloads the file in
	// a loop over it (the paper's affinity experiments). Otherwise every
	// download opens a new connection (server churn, MPTCP).
	Persistent bool
	MPTCP      bool
	// Stall: a connection that receives nothing for this long is broken,
	// as a client sees it (as is one reset or closed by the server).
	Stall time.Duration
	Seed  int64 // picks the clients' source ports, and so the flows' hashes
	// Idle adds persistent connections per client that ask a small
	// response now and then and are silent in between.
	Idle IdleLoad
	// UDPFlows adds long-lived UDP flows per client to VIP:53 (udp.go).
	UDPFlows int
	// QUICFlows adds QUIC connections per client to VIP:443 that migrate
	// once (quic.go).
	QUICFlows int
}

// Load is the clients' traffic: PerClient connection slots on every
// client, each downloading in a closed loop until stopped.
type Load struct {
	opts    LoadOptions
	vip     netip.Addr // the lab's VIP, in its family
	network string     // tcp4 or tcp6
	ctx     context.Context
	abort   context.CancelFunc
	stop    atomic.Bool
	stopped chan struct{} // closed with stop: wakes idle connections
	once    sync.Once
	wg      sync.WaitGroup
	bytes   atomic.Uint64
	started time.Time

	mu     sync.Mutex
	conns  []*connRecord
	fcts   []FCT
	broken []BrokenConn
	live   map[net.Conn]struct{}
	// missing counts MPTCP connections closed without a secondary subflow, by why.
	missing map[string]int
}

// connRecord is one client connection as the client saw it.
type connRecord struct {
	client   int
	src      netip.AddrPort // the client's end
	kind     string         // "busy" (persistent, downloading), "idle", "short"
	server   string         // the last server that answered on it
	opened   bool           // the connection was established
	requests int
	broken   bool
	mptcp    bool // MPTCP was negotiated
	subflows int  // secondary subflows seen established (most at any time)
}

// FCT is one download's flow completion time.
type FCT struct {
	At       time.Duration `json:"at"` // since the load started, at completion
	Duration time.Duration `json:"duration"`
}

// BrokenConn is a connection that broke, when and why.
type BrokenConn struct {
	At     Duration `json:"at"` // since the load started
	Client int      `json:"client"`
	Kind   string   `json:"kind"`             // busy, idle or short
	Server string   `json:"server,omitempty"` // last server that answered on it, if any
	Reason string   `json:"reason"`
}

type loadClient struct {
	index int
	ns    *netlab.Namespace
	addr  netip.Addr
	ports []int // seeded permutation of the ports this client binds
}

// StartLoad starts the clients' traffic.
func (l *Lab) StartLoad(o LoadOptions) *Load {
	ctx, cancel := context.WithCancel(context.Background())
	ld := &Load{opts: o, ctx: ctx, abort: cancel, started: time.Now(), live: map[net.Conn]struct{}{}, missing: map[string]int{},
		stopped: make(chan struct{}), vip: l.vip(), network: l.tcp()}
	for i, ns := range l.clients {
		c := &loadClient{index: i, ns: ns, addr: l.clientSrc(i), ports: seededPorts(o.Seed, i)}
		for j := 0; j < o.PerClient; j++ {
			ld.wg.Add(1)
			if o.Persistent {
				go ld.persistent(c, j)
			} else {
				go ld.shortLived(c, j)
			}
		}
		for j := 0; j < o.Idle.PerClient; j++ {
			ld.wg.Add(1)
			go ld.idle(c, o.PerClient+j)
		}
		for j := 0; j < o.UDPFlows; j++ {
			ld.wg.Add(1)
			go ld.udpFlow(c, j)
		}
		for j := 0; j < o.QUICFlows; j++ {
			ld.wg.Add(1)
			go ld.quicFlow(c, j)
		}
	}
	return ld
}

// halt sets stop and wakes the idle connections.
func (ld *Load) halt() {
	ld.stop.Store(true)
	ld.once.Do(func() { close(ld.stopped) })
}

// seededPorts is a permutation of 10000–59999 drawn from the seed: the
// flows, hence their buckets and muxes, are the same in every run with the
// same seed. (Kernel-chosen ports start at 60000 in the clients.)
func seededPorts(seed int64, client int) []int {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(client)))
	ports := r.Perm(50000)
	for i := range ports {
		ports[i] += 10000
	}
	return ports
}

func (ld *Load) newRecord(client int, kind string) *connRecord {
	rec := &connRecord{client: client, kind: kind}
	ld.mu.Lock()
	ld.conns = append(ld.conns, rec)
	ld.mu.Unlock()
	return rec
}

// persistent keeps one connection and downloads over it until stopped.
func (ld *Load) persistent(c *loadClient, slot int) {
	defer ld.wg.Done()
	rec := ld.newRecord(c.index, "busy")
	conn, err := ld.dial(c, c.ports[slot%len(c.ports)], rec)
	if err != nil {
		ld.fail(rec, c, "", err)
		return
	}
	defer ld.closeConn(conn)
	br := bufio.NewReader(conn)
	for !ld.stop.Load() {
		server, err := ld.download(conn, br, "/file", ld.opts.FileSize, time.Now(), false)
		if err != nil {
			ld.fail(rec, c, server, err)
			return
		}
		ld.done(rec, server)
		if rec.mptcp {
			ld.subflows(rec, conn, false)
		}
	}
}

// shortLived opens a new connection for every download until stopped.
// An MPTCP connection first waits (bounded) for its secondary subflow, as
// a long download would have it; the server then closes after the
// response, so the clients' ports do not pile up in TIME_WAIT.
func (ld *Load) shortLived(c *loadClient, slot int) {
	defer ld.wg.Done()
	for k := 0; !ld.stop.Load(); k++ {
		rec := ld.newRecord(c.index, "short")
		start := time.Now()
		conn, err := ld.dial(c, c.ports[(slot+k*ld.opts.PerClient)%len(c.ports)], rec)
		if err != nil {
			ld.fail(rec, c, "", err)
			continue
		}
		if rec.mptcp {
			ld.subflows(rec, conn, true)
		}
		server, err := ld.download(conn, bufio.NewReader(conn), "/file", ld.opts.FileSize, start, true)
		if err != nil {
			ld.fail(rec, c, server, err)
		} else {
			ld.done(rec, server)
		}
		ld.closeConn(conn)
	}
}

func (ld *Load) dial(c *loadClient, port int, rec *connRecord) (*watchedConn, error) {
	var conn net.Conn
	err := c.ns.Do(func() (err error) {
		d := net.Dialer{
			Timeout:   ld.opts.Stall,
			LocalAddr: &net.TCPAddr{IP: c.addr.AsSlice(), Port: port},
			Control: func(_, _ string, rc syscall.RawConn) error {
				var serr error
				rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) })
				return serr
			},
		}
		d.SetMultipathTCP(ld.opts.MPTCP)
		conn, err = d.DialContext(ld.ctx, ld.network, netip.AddrPortFrom(ld.vip, 80).String())
		return err
	})
	if err != nil {
		return nil, err
	}
	tc := conn.(*net.TCPConn)
	mp, _ := tc.MultipathTCP()
	ld.mu.Lock()
	rec.opened, rec.mptcp = true, mp
	rec.src = netip.AddrPortFrom(c.addr, uint16(port))
	ld.mu.Unlock()
	w := &watchedConn{TCPConn: tc, stall: ld.opts.Stall, bytes: &ld.bytes}
	ld.mu.Lock()
	ld.live[w] = struct{}{}
	ld.mu.Unlock()
	return w, nil
}

func (ld *Load) closeConn(c *watchedConn) {
	ld.mu.Lock()
	delete(ld.live, c)
	ld.mu.Unlock()
	c.Close()
}

// idle keeps one connection that is silent most of the time: one small
// request when it opens (so it is placed on a server), then one every
// 0.5–1.5 × Every, drawn from the seed. When the load stops it asks once
// more, so a connection broken while silent is counted.
func (ld *Load) idle(c *loadClient, slot int) {
	defer ld.wg.Done()
	rec := ld.newRecord(c.index, "idle")
	r := rand.New(rand.NewPCG(uint64(ld.opts.Seed), uint64(c.index)<<20|uint64(slot)))
	// From the end of the permutation: short-lived slots walk it from the
	// start (slot + k·PerClient), and a port an idle connection holds would
	// make their connect fail (the 4-tuple is in use).
	conn, err := ld.dial(c, c.ports[len(c.ports)-1-slot%len(c.ports)], rec)
	if err != nil {
		ld.fail(rec, c, "", err)
		return
	}
	defer ld.closeConn(conn)
	br := bufio.NewReader(conn)
	every := ld.opts.Idle.Every
	for {
		server, err := ld.download(conn, br, "/small", smallSize, time.Now(), false)
		if err != nil {
			ld.fail(rec, c, server, err)
			return
		}
		ld.done(rec, server)
		if ld.stop.Load() {
			return
		}
		select {
		case <-ld.stopped:
		case <-time.After(every/2 + time.Duration(r.Int64N(int64(every)))):
		}
	}
}

// download fetches path once and checks its length is size; the
// completion time of a file download counts from start (the dial, for a
// short-lived connection).
func (ld *Load) download(conn *watchedConn, br *bufio.Reader, path string, size int, start time.Time, last bool) (server string, err error) {
	host := ld.vip.String()
	if ld.vip.Is6() {
		host = "[" + host + "]"
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	if last {
		req += "Connection: close\r\n"
	}
	conn.SetWriteDeadline(time.Now().Add(ld.opts.Stall))
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	server = resp.Header.Get("X-Server")
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return server, err
	}
	if resp.StatusCode != http.StatusOK || n != int64(size) {
		return server, fmt.Errorf("bad response: %s, %d of %d bytes", resp.Status, n, size)
	}
	if path != "/file" {
		return server, nil
	}
	end := time.Now()
	ld.mu.Lock()
	ld.fcts = append(ld.fcts, FCT{At: end.Sub(ld.started), Duration: end.Sub(start)})
	ld.mu.Unlock()
	return server, nil
}

// busyFlows lists the client ends of the busy connections still running
// whose last answer came from server (a name like srv0).
func (ld *Load) busyFlows(server string) []netip.AddrPort {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	var out []netip.AddrPort
	for _, rec := range ld.conns {
		if rec.kind == "busy" && rec.opened && !rec.broken && rec.server == server {
			out = append(out, rec.src)
		}
	}
	return out
}

// done records a completed download and the server that answered.
func (ld *Load) done(rec *connRecord, server string) {
	ld.mu.Lock()
	rec.requests++
	rec.server = server
	ld.mu.Unlock()
}

// subflows records the connection's secondary subflows; wait gives one
// being opened time to come up (a new connection).
func (ld *Load) subflows(rec *connRecord, conn *watchedConn, wait bool) {
	sub := secondarySubflows(conn.TCPConn, wait)
	ld.mu.Lock()
	defer ld.mu.Unlock()
	rec.subflows = max(rec.subflows, sub.established)
	if wait && sub.established == 0 && sub.why != "" {
		ld.missing[sub.why]++
	}
}

// subflowOutcome is what became of a connection's secondary subflow.
type subflowOutcome struct {
	established int
	why         string // when none: "no ADD_ADDR", "join refused", "join pending"
}

// subflowWait bounds how long a connection about to close waits for its
// secondary subflow: the server's ADD_ADDR and the join take a round trip
// or two, a SYN lost on a failed mux one retransmission (1 s) more.
const subflowWait = 3 * time.Second

// secondarySubflows counts the connection's established subflows beyond
// the first; with wait, it gives one being opened time to come up.
// (The server announces VIP:server-id once the connection is established;
// the client then joins from its second path.)
func secondarySubflows(c *net.TCPConn, wait bool) subflowOutcome {
	deadline := time.Now().Add(subflowWait)
	for {
		st, err := readSubflows(c)
		if err != nil {
			return subflowOutcome{why: "unreadable: " + err.Error()}
		}
		if st.established > 1 {
			return subflowOutcome{established: st.established - 1}
		}
		out := subflowOutcome{why: "join pending"}
		switch {
		case st.addAddrAccepts == 0:
			out.why = "no ADD_ADDR"
		case st.pending == 0:
			return subflowOutcome{why: "join refused"}
		}
		if !wait || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fail records a broken connection, unless the load was aborted.
func (ld *Load) fail(rec *connRecord, c *loadClient, server string, err error) {
	if ld.ctx.Err() != nil {
		return
	}
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if server == "" {
		server = rec.server // broke before this response named its server
	}
	rec.broken = true
	ld.broken = append(ld.broken, BrokenConn{At: Duration(time.Since(ld.started).Round(time.Millisecond)), Client: c.index, Kind: rec.kind, Server: server, Reason: ld.reason(err)})
}

func (ld *Load) reason(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("stalled (nothing for %v)", ld.opts.Stall)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by the server"
	}
	return err.Error()
}

// Stop lets every connection finish its current download (each bounded by
// the stall timeout), then summarises. Downloads still running after
// drain are cut and not counted either way.
func (ld *Load) Stop(drain time.Duration) LoadResult {
	ld.halt()
	finished := make(chan struct{})
	go func() { ld.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(drain):
		ld.Abort()
		<-finished
	}
	return ld.Snapshot()
}

// Abort ends the load at once (interrupt): nothing more is counted.
func (ld *Load) Abort() {
	ld.halt()
	ld.abort()
	ld.mu.Lock()
	for c := range ld.live {
		c.Close()
	}
	ld.mu.Unlock()
}

// LoadResult sums up the load.
type LoadResult struct {
	Connections         int
	Broken              int
	IdleConnections     int
	BrokenByKind        map[string]int
	Requests            int
	Bytes               uint64
	MPTCPConnections    int
	SubflowsEstablished int
	SubflowsMissing     map[string]int // MPTCP connections without one, by why
	BrokenConns         []BrokenConn
	FCTs                []FCT
}

// Snapshot sums up the load so far.
func (ld *Load) Snapshot() LoadResult {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	r := LoadResult{BrokenByKind: map[string]int{}, Bytes: ld.bytes.Load(), SubflowsMissing: maps.Clone(ld.missing), BrokenConns: append([]BrokenConn(nil), ld.broken...), FCTs: append([]FCT(nil), ld.fcts...)}
	for _, c := range ld.conns {
		if !c.opened && !c.broken {
			continue // being opened as the load stopped
		}
		r.Connections++
		if c.kind == "idle" {
			r.IdleConnections++
		} else {
			r.Requests += c.requests
		}
		if c.broken {
			r.Broken++
			r.BrokenByKind[c.kind]++
		}
		if c.mptcp {
			r.MPTCPConnections++
			if c.subflows > 0 {
				r.SubflowsEstablished++
			}
		}
	}
	return r
}

// Bytes is the number of bytes clients received so far.
func (ld *Load) Bytes() uint64 { return ld.bytes.Load() }

// watchedConn counts received bytes and declares a stall when nothing
// arrives for the stall timeout.
type watchedConn struct {
	*net.TCPConn
	stall time.Duration
	bytes *atomic.Uint64
}

func (c *watchedConn) Read(b []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(c.stall))
	n, err := c.TCPConn.Read(b)
	c.bytes.Add(uint64(n))
	return n, err
}

func (ld *Load) brokenCount() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.broken)
}
