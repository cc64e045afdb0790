package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// labConn is one persistent HTTP connection of the test, from client 0.
type labConn struct {
	c      net.Conn
	br     *bufio.Reader
	server string // X-Server of the first answer
}

func (l *Lab) dialVIP(t *testing.T) *labConn {
	t.Helper()
	var c net.Conn
	err := l.clients[0].Do(func() (err error) {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp4", netip.AddrPortFrom(VIP, 80).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lc := &labConn{c: c, br: bufio.NewReader(c)}
	s, err := lc.get()
	if err != nil {
		t.Fatal(err)
	}
	lc.server = s
	return lc
}

// get asks for /small on the connection and returns the server that
// answered.
func (lc *labConn) get() (string, error) {
	lc.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(lc.c, "GET /small HTTP/1.1\r\nHost: "+VIP.String()+"\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(lc.br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return resp.Header.Get("X-Server"), nil
}

// TestPrismKeepAlive, on real packets: the XDP mux sets the keep-alive
// bits of the MCT entries its packets hit, the mux daemon hands them to
// the controller, and the controller prunes an entry only once no listed
// mux hit it for the idle rounds AND its server's agent no longer lists the
// socket. Connections of a removed server are migrated into the MCT; then
// some stay busy, some stay open but silent, some close. While the
// controller's mux list names a mux nobody runs (it cannot be reached),
// nothing is pruned; once the list is right, exactly the closed
// connections' entries go, and the busy and silent connections still work.
func TestPrismKeepAlive(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "beamer-lab-") // the router's daemons (user frr) must reach it, as in Run
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := Start(ctx, Options{Beamer: beamerBin, Dir: dir, Clients: 1, Muxes: 1, Servers: 2, Buckets: 64,
		Window: 10 * time.Second, FileSize: 4096, Strategy: "prism"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("daemon logs:\n%s", l.procs.logs())
		}
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		checkClean(t, l.Inventory())
	}()
	if !l.prismKeepAlive {
		t.Fatal("the controller has no --prism-muxes-file: the binary under test lacks keep-alive pruning")
	}
	// An address on the fabric that no mux runs on: listed, it cannot answer.
	l.prismExtraMuxes = []string{netip.AddrPortFrom(muxAddr(MaxMuxes-1), 9100).String()}
	for _, step := range []func() error{l.CreateInstance, func() error { return l.AddServer(0) }, func() error { return l.AddServer(1) },
		func() error { return l.StartMux(ctx, 0) }} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	var conns []*labConn
	for range 30 {
		conns = append(conns, l.dialVIP(t))
	}
	defer func() {
		for _, c := range conns {
			c.c.Close()
		}
	}()
	var moved []*labConn
	for _, c := range conns {
		if c.server == "srv1" {
			moved = append(moved, c)
		}
	}
	if len(moved) < 6 {
		t.Fatalf("only %d of %d connections on server 1: too few to split three ways", len(moved), len(conns))
	}
	if err := l.RemoveServer(1); err != nil {
		t.Fatal(err)
	}
	mct := func() int {
		n, ok := l.MCTEntries()
		if !ok {
			t.Fatal("no mux reports the MCT size")
		}
		return n
	}
	waitMCT := func(want int, within time.Duration) int {
		var n int
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if n = mct(); n == want {
				return n
			}
		}
		return n
	}
	if n := waitMCT(len(moved), 15*time.Second); n != len(moved) {
		t.Fatalf("MCT holds %d entries after server 1's removal, want its %d connections", n, len(moved))
	}
	// What the operator sees: ctl show's MCT size, text and JSON.
	out, err := l.Ctl("show", Instance)
	if err != nil || !strings.Contains(out, fmt.Sprintf("MCT %d of", len(moved))) {
		t.Errorf("ctl show does not give the MCT size %d (%v):\n%s", len(moved), err, out)
	}
	out, err = l.Ctl("show", Instance, "-o", "json")
	var view struct {
		MCTSize int `json:"mct_size"`
	}
	if err != nil || json.Unmarshal([]byte(out), &view) != nil || view.MCTSize != len(moved) {
		t.Errorf("ctl show -o json: mct_size %d, want %d (%v)", view.MCTSize, len(moved), err)
	}
	// Split: busy (a request every 300 ms), silent (open, nothing sent),
	// closed.
	var busy, silent, closed []*labConn
	for i, c := range moved {
		switch i % 3 {
		case 0:
			busy = append(busy, c)
		case 1:
			silent = append(silent, c)
		default:
			closed = append(closed, c)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var busyErr error
	for _, c := range busy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
				}
				if s, err := c.get(); err != nil || s != "srv1" {
					mu.Lock()
					busyErr = fmt.Errorf("busy connection: answer from %q: %v", s, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	for _, c := range closed {
		c.c.Close()
	}
	// A listed mux cannot be reached: 3 idle rounds of 1 s pass several
	// times over, and no entry goes.
	time.Sleep(8 * time.Second)
	if n := mct(); n != len(moved) {
		t.Fatalf("with a listed mux unreachable, the MCT went from %d to %d entries", len(moved), n)
	}
	// The list is right again: the closed connections' entries go.
	l.prismExtraMuxes = nil
	if err := l.writePrismMuxes(); err != nil {
		t.Fatal(err)
	}
	want := len(busy) + len(silent)
	if n := waitMCT(want, 20*time.Second); n != want {
		t.Fatalf("MCT %d entries, want %d (busy %d + silent %d; %d closed)", n, want, len(busy), len(silent), len(closed))
	}
	time.Sleep(4 * time.Second) // the silent ones are suspected and asked about, again and again
	if n := mct(); n != want {
		t.Fatalf("MCT went to %d entries, want the %d live connections' kept", n, want)
	}
	close(stop)
	wg.Wait()
	if busyErr != nil {
		t.Fatal(busyErr)
	}
	for _, c := range silent {
		if s, err := c.get(); err != nil || s != "srv1" {
			t.Fatalf("silent connection after the pruning: answer from %q: %v", s, err)
		}
	}
	t.Logf("%d connections, %d on the removed server: %d busy, %d silent kept; %d closed pruned", len(conns), len(moved), len(busy), len(silent), len(closed))
}
