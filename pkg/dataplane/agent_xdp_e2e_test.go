package dataplane

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestEndToEndAgentXDP is TestEndToEnd's scenario with each server's agent
// also attached in native XDP on its veth, as on a server whose NIC runs
// XDP: connections open and are served through the XDP fast path; after
// every bucket moves from a to b, b's XDP path leaves the chainable packets
// to tc, which daisy-chains them to a, so no open connection breaks; SYN
// cookies still work; after the window a stray packet at the newest
// generation is reset, and one from a stale mux dropped.
func TestEndToEndAgentXDP(t *testing.T) {
	e := newE2E(t)
	e.attachAgentsXDP(t)
	const n = 8
	var old []*echoConn
	for i := 0; i < n; i++ {
		c := e.dial(t, false)
		if who, err := c.ask(fmt.Sprint("hello-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d: served by %q, %v", i, who, err)
		}
		old = append(old, c)
	}
	// Each connection's SYN and its ACKs at the newest generation.
	if d := e.counter(t, "a", "xdp_decap"); d < 3*n {
		t.Fatalf("server a decapsulated %d packets in XDP, want at least %d", d, 3*n)
	}

	moved := time.Now()
	e.moveAll(t, "a", "b", moved)
	for i, c := range old {
		if who, err := c.ask(fmt.Sprint("after-move-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("open connection %d broke after the move: served by %q, %v", i, who, err)
		}
	}
	if ch := e.counter(t, "b", "chained"); ch < n {
		t.Fatalf("server b chained %d packets, want at least %d", ch, n)
	}
	xdpB := e.counter(t, "b", "xdp_decap")
	for i := 0; i < 4; i++ {
		if who, err := e.dial(t, false).ask("new", answerWithin); err != nil || who != "b" {
			t.Fatalf("new connection %d after the move: served by %q, %v", i, who, err)
		}
	}
	if e.counter(t, "b", "xdp_decap") == xdpB {
		t.Error("no SYN of the new connections took b's XDP path")
	}

	must(t, e.servers["b"].Sysctl("net.ipv4.tcp_syncookies", "2"))
	cookies := e.counter(t, "b", "local_cookie")
	for i := 0; i < 2; i++ {
		if who, err := e.dial(t, false).ask("cookie", answerWithin); err != nil || who != "b" {
			t.Fatalf("cookie connection %d: served by %q, %v", i, who, err)
		}
	}
	if d := e.counter(t, "b", "local_cookie") - cookies; d < 2 {
		t.Errorf("%d ACKs kept by their SYN cookie behind the XDP path, want 2", d)
	}
	must(t, e.servers["b"].Sysctl("net.ipv4.tcp_syncookies", "1"))

	e.agents["b"].SyncClock(moved.Add(4*time.Minute + time.Second))
	if _, err := old[0].ask("late", answerWithin); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("stray packet at the newest generation after the window: %v, want a reset", err)
	}
	e.agents["b"].SetNewestSeen(0, e.agents["b"].NewestSeen(0)+1)
	drops := e.counter(t, "b", "drop_stale_generation")
	_, err := old[1].ask("stale", 700*time.Millisecond)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("stray packet from a stale mux: %v, want a silent drop", err)
	}
	if e.counter(t, "b", "drop_stale_generation") == drops {
		t.Error("drop_stale_generation did not count the stray packet")
	}
}
