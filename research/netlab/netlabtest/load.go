package netlabtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// LoadOptions shape a Load: live connections to a ServeEcho server that
// keep exchanging data while a test restarts or moves something under them.
type LoadOptions struct {
	Network, Address string        // where to connect, e.g. "tcp4", "198.18.100.1:80"
	Echo             int           // connections that send a line and wait for it back, again and again
	Stream           int           // connections that read a download (StreamRequest)
	Every            time.Duration // pause between two exchanges of an echo connection
	Pad              int           // bytes of padding in every echo line
	// Stall is how long Flowing waits for every connection to make
	// progress; 0: 20 s.
	Stall time.Duration
	// Within bounds how long the load runs; 0: 3 minutes. A load still
	// running then stops, and Flowing reports the stall.
	Within time.Duration
}

// Load is a set of live connections, each recording its progress, its
// longest pause and how it broke. Every exchange has a deadline of
// AnswerWithin: a lost segment costs a retransmission timeout on a busy
// machine, a broken connection stays silent far longer.
type Load struct {
	opts     LoadOptions
	mu       sync.Mutex
	progress []int
	longest  []time.Duration // per connection: the longest time between two exchanges (echo) or reads (stream)
	failures []string
	closing  bool // the test ended: errors from closing connections are not failures
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

// StartLoad opens the connections from client (failing the test if one
// does not open) and starts their traffic. They stop at End, at the
// options' Within, or when the test ends.
func StartLoad(t testing.TB, client *netlab.Namespace, o LoadOptions) *Load {
	t.Helper()
	if o.Stall == 0 {
		o.Stall = 20 * time.Second
	}
	if o.Within == 0 {
		o.Within = 3 * time.Minute
	}
	n := o.Echo + o.Stream
	ctx, cancel := context.WithTimeout(context.Background(), o.Within)
	a := &Load{opts: o, progress: make([]int, n), longest: make([]time.Duration, n), cancel: cancel}
	var conns []net.Conn
	t.Cleanup(func() {
		a.mu.Lock()
		a.closing = true
		a.mu.Unlock()
		cancel()
		for _, c := range conns {
			c.Close()
		}
		a.wg.Wait()
	})
	for i := range n {
		var c net.Conn
		d := net.Dialer{Timeout: AnswerWithin}
		Must(t, client.Do(func() (err error) { c, err = d.Dial(o.Network, o.Address); return err }))
		conns = append(conns, c)
		stream := i >= o.Echo
		if stream {
			if _, err := io.WriteString(c, StreamRequest); err != nil {
				t.Fatal(err)
			}
		}
		a.wg.Add(1)
		go a.run(ctx, i, c, stream)
	}
	return a
}

func (a *Load) run(ctx context.Context, i int, c net.Conn, stream bool) {
	defer a.wg.Done()
	br := bufio.NewReader(c)
	buf := make([]byte, 64<<10)
	pad := ""
	if a.opts.Pad > 0 {
		pad = " " + strings.Repeat("x", a.opts.Pad-1)
	}
	kind := "echo"
	if stream {
		kind = "stream"
	}
	last := time.Now()
	for n := 0; ctx.Err() == nil; n++ {
		c.SetDeadline(time.Now().Add(AnswerWithin))
		var err error
		if stream {
			_, err = br.Read(buf)
		} else {
			msg := fmt.Sprintf("conn %d message %d%s\n", i, n, pad)
			if _, err = io.WriteString(c, msg); err == nil {
				var got string
				if got, err = br.ReadString('\n'); err == nil && got != msg {
					err = fmt.Errorf("echo %q, sent %q", got, msg)
				}
			}
		}
		now := time.Now()
		a.mu.Lock()
		if err != nil {
			if !a.closing {
				a.failures = append(a.failures, fmt.Sprintf("connection %d (%s) after %d exchanges: %v", i, kind, n, err))
			}
			a.mu.Unlock()
			return
		}
		a.progress[i]++
		a.longest[i] = max(a.longest[i], now.Sub(last))
		a.mu.Unlock()
		last = now
		if !stream {
			time.Sleep(a.opts.Every)
		}
	}
}

// Flowing waits (at most the options' Stall) until every connection made
// 5 more exchanges or reads and none broke; else it fails the test.
func (a *Load) Flowing(t testing.TB, what string) {
	t.Helper()
	a.mu.Lock()
	before := append([]int(nil), a.progress...)
	a.mu.Unlock()
	for deadline := time.Now().Add(a.opts.Stall); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		a.mu.Lock()
		ok := len(a.failures) == 0
		for i := range before {
			ok = ok && a.progress[i] >= before[i]+5
		}
		a.mu.Unlock()
		if ok {
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t.Fatalf("%s: connections stalled or broke (progress before %v, now %v): %v", what, before, a.progress, a.failures)
}

// TakeLongest is the longest pause of an echo and of a stream connection
// since the last call (or the start).
func (a *Load) TakeLongest() (echo, stream time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, d := range a.longest {
		if i < a.opts.Echo {
			echo = max(echo, d)
		} else {
			stream = max(stream, d)
		}
		a.longest[i] = 0
	}
	return echo, stream
}

// Failures are the connections broken so far.
func (a *Load) Failures() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.failures...)
}

// End stops the traffic, waits for the exchanges under way, and says which
// connections broke.
func (a *Load) End() []string {
	a.cancel()
	a.wg.Wait()
	return a.Failures()
}
