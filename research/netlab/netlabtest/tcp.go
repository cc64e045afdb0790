package netlabtest

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// AnswerWithin is how long a test waits for an answer that must come, or
// a connection that must open. It is generous on purpose: tests share the
// kernel's queues with whatever else runs (in CI, floods in other
// packages), and one lost segment costs a retransmission timeout — 1 s for
// a SYN, then doubling. A broken connection still fails: a reset at once,
// a black hole at the deadline.
const AnswerWithin = 10 * time.Second

// Listen opens a listener in ns (lc nil: the default configuration),
// closed when the test ends.
func Listen(t testing.TB, ns *netlab.Namespace, lc *net.ListenConfig, network, address string) net.Listener {
	t.Helper()
	if lc == nil {
		lc = &net.ListenConfig{}
	}
	var l net.Listener
	Must(t, ns.Do(func() (err error) {
		l, err = lc.Listen(context.Background(), network, address)
		return err
	}))
	t.Cleanup(func() { l.Close() })
	return l
}

// Dial connects from ns (d nil: a dialer with AnswerWithin as its timeout);
// the connection is closed when the test ends.
func Dial(t testing.TB, ns *netlab.Namespace, d *net.Dialer, network, address string) net.Conn {
	t.Helper()
	if d == nil {
		d = &net.Dialer{Timeout: AnswerWithin}
	}
	var c net.Conn
	Must(t, ns.Do(func() (err error) {
		c, err = d.Dial(network, address)
		return err
	}))
	t.Cleanup(func() { c.Close() })
	return c
}

// StreamRequest opens a download from ServeEcho.
const StreamRequest = "stream\n"

// streamChunk is what a download sends every streamEvery.
var streamChunk = []byte(strings.Repeat("0123456789abcdef", 256))

const streamEvery = 5 * time.Millisecond

// ServeEcho serves l until the test ends (see Serve): a connection
// whose first bytes are StreamRequest gets 4 KiB every 5 ms until it
// closes (a download, so that a server sends while something restarts);
// any other gets back every byte it sends.
func ServeEcho(t testing.TB, l net.Listener) {
	Serve(t, l, func(c net.Conn) {
		br := bufio.NewReader(c)
		// Only a connection starting with 's' waits for a whole request:
		// an echo client's shorter first message is answered at once.
		if first, err := br.Peek(1); err != nil {
			return
		} else if first[0] == StreamRequest[0] {
			if req, err := br.Peek(len(StreamRequest)); err == nil && string(req) == StreamRequest {
				for {
					c.SetWriteDeadline(time.Now().Add(30 * time.Second))
					if _, err := c.Write(streamChunk); err != nil {
						return
					}
					time.Sleep(streamEvery)
				}
			}
		}
		io.Copy(c, br)
	})
}
