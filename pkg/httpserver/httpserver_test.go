package httpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// The per-source rate table never grows past MaxSources, whatever the
// number of addresses, and forgets idle ones.
func TestSourceTableBounded(t *testing.T) {
	s := NewSourceLimiter(10, 10, 100)
	now := time.Unix(1_700_000_000, 0)
	for i := range 10_000 {
		a := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		s.allow(a, now)
	}
	if n := s.size(); n != 100 {
		t.Fatalf("table of %d sources, want the bound 100", n)
	}
	s.allow(netip.MustParseAddr("198.19.0.1"), now.Add(2*sourceIdle))
	if n := s.size(); n != 1 {
		t.Fatalf("after the idle period the table has %d sources, want 1", n)
	}
}

// One source gets its burst, then 429; another source is not slowed; an
// exempt path is never limited.
func TestPerSourceRate(t *testing.T) {
	lim := Defaults()
	lim.PerSourceRate, lim.PerSourceBurst, lim.Exempt = 1, 5, []string{"/healthz"}
	srv := New("test", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), lim, nil)
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(src, path string) int {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext}}
		resp, err := c.Get(fmt.Sprintf("http://%s%s", addr, path))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	codes := map[int]int{}
	for range 20 {
		codes[get("127.0.0.2", "/x")]++
	}
	if codes[200] < 5 || codes[200] > 7 || codes[429] < 13 {
		t.Errorf("one source, 20 requests: %v, want the burst of 5 (+ refill) then 429", codes)
	}
	if c := get("127.0.0.3", "/x"); c != 200 {
		t.Errorf("another source: %d", c)
	}
	if c := get("127.0.0.2", "/healthz"); c != 200 {
		t.Errorf("exempt path from the limited source: %d", c)
	}
}

// Connections over a source's budget are closed at once; another source
// still connects and is answered; slots come back on close.
func TestConnectionBudget(t *testing.T) {
	lim := Defaults()
	lim.PerSourceConns, lim.LocalConns = 3, 10
	srv := New("test", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), lim, nil)
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	var held []net.Conn
	for range 10 {
		c, err := d.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond)
	if _, lo, _ := srv.Open(); lo != 3 {
		t.Errorf("%d connections held from one source, want its budget 3", lo)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr.String() + "/")
	if err != nil {
		t.Fatalf("another source during the flood: %v", err)
	}
	resp.Body.Close()
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, lo, src := srv.Open(); lo == 0 && src == 0 {
			break
		}
		if time.Now().After(deadline) {
			r, lo, src := srv.Open()
			t.Fatalf("after closing: %d remote, %d loopback, %d sources held", r, lo, src)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A kind of line is printed once per interval, the next one counting what
// was held back.
func TestLineLimiter(t *testing.T) {
	l := NewLineLimiter(time.Hour)
	if ok, n := l.Allow("a"); !ok || n != 0 {
		t.Fatal("first line held back")
	}
	for range 5 {
		if ok, _ := l.Allow("a"); ok {
			t.Fatal("repeated line printed within the interval")
		}
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another kind held back")
	}
	l.kinds["a"].last = time.Now().Add(-2 * time.Hour)
	if ok, n := l.Allow("a"); !ok || n != 5 {
		t.Fatalf("after the interval: %v, suppressed %d, want 5", ok, n)
	}
	for i := range 1000 {
		l.Allow(fmt.Sprint("kind", i))
	}
	if len(l.kinds) > maxLineKinds+1 {
		t.Fatalf("%d kinds tracked", len(l.kinds))
	}
}
