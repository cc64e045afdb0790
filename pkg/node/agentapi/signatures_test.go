package agentapi

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// TestSignaturesReportLiveSockets: the agent lists exactly the Prism
// signatures of its live connections of the VIP (what the controller's SCT
// is built from), computed as the mux computes them, and forgets closed ones.
func TestSignaturesReportLiveSockets(t *testing.T) {
	l := newServerLab(t)
	const n, buckets = 12, 16
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := l.dialCli(ctx(t), "tcp4", vip.String()+":80")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	check := func(cs []net.Conn) error {
		want := map[uint64]uint32{}
		for _, c := range cs {
			a := netip.MustParseAddrPort(c.LocalAddr().String())
			want[wire.Flow{Src: a.Addr(), Dst: vip, SrcPort: a.Port(), DstPort: 80, Proto: 6}.Signature()]++
		}
		rep, err := l.client.Signatures(ctx(t), l.api, vip, buckets)
		if err != nil {
			return err
		}
		if int(rep.Total) != len(cs) || len(rep.Sigs) != len(want) {
			return fmt.Errorf("report of %d connections / %d signatures, want %d / %d", rep.Total, len(rep.Sigs), len(cs), len(want))
		}
		for _, sc := range rep.Sigs {
			if want[sc.Sig] != sc.Count {
				return fmt.Errorf("signature %#x counted %d, want %d", sc.Sig, sc.Count, want[sc.Sig])
			}
		}
		return nil
	}
	if err := eventually(func() error { return check(conns) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns[:5] {
		c.Close()
	}
	if err := eventually(func() error { return check(conns[5:]) }); err != nil {
		t.Fatalf("after closing 5: %v", err)
	}
}

// TestSignaturesHandshakes: a connection in its handshake (the server
// answered the SYN, the client's ACK has not come) is listed while its
// SYN-ACK is fresh — a bin moving then must protect it — and left out once
// the server had to send the SYN-ACK again (a client that does not answer
// within the initial RTO: what a SYN flood's spoofed sources leave, which
// must not fill the MCT).
func TestSignaturesHandshakes(t *testing.T) {
	l := newServerLab(t)
	lost := netip.MustParseAddr("198.18.0.2") // the server's SYN-ACKs to it vanish
	if err := l.cli.AddAddr("eth0", netip.PrefixFrom(lost, 32)); err != nil {
		t.Fatal(err)
	}
	// Through a neighbour that does not exist: the route exists (the
	// server answers the SYN), the SYN-ACK never leaves.
	if _, err := l.srv.Run("ip", "route", "add", lost.String()+"/32", "via", "198.18.0.3"); err != nil {
		t.Fatal(err)
	}
	const port = 40123
	sig := wire.Flow{Src: lost, Dst: vip, SrcPort: port, DstPort: 80, Proto: 6}.Signature()
	listed := func() (bool, error) {
		rep, err := l.client.Signatures(ctx(t), l.api, vip, 16)
		if err != nil {
			return false, err
		}
		for _, sc := range rep.Sigs {
			if sc.Sig == sig {
				return true, nil
			}
		}
		return false, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.cli.Do(func() error {
			d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: lost.AsSlice(), Port: port}}
			c, err := d.Dial("tcp4", vip.String()+":80")
			if err == nil {
				c.Close()
			}
			return err
		})
	}()
	defer func() { <-done }()
	start := time.Now()
	seen := false
	for !seen && time.Since(start) < 700*time.Millisecond {
		var err error
		if seen, err = listed(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !seen {
		t.Fatal("a handshake with its first SYN-ACK just sent is not listed")
	}
	time.Sleep(time.Until(start.Add(1500 * time.Millisecond))) // the SYN-ACK is sent again at 1 s
	if err := eventually(func() error {
		if in, err := listed(); err != nil || in {
			return fmt.Errorf("still listed (%v) %v after the start", err, time.Since(start).Round(time.Millisecond))
		}
		return nil
	}); err != nil {
		t.Fatalf("a handshake whose SYN-ACK was retransmitted: %v", err)
	}
}
