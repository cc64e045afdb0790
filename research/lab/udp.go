package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"golang.org/x/sys/unix"
)

// UDPPort is the lab's UDP service on the VIP (issue 17), offered when the
// load has UDP flows.
const UDPPort = 53

// udpServer answers each datagram to VIP:53 with "<server>:<datagram>"
// from a socket connected to its client, which it opens on the client's
// first datagram: a UDP service with per-client sockets (game servers,
// connected QUIC or DTLS stacks), the kind Beamer's agents can keep across
// bucket moves (docs/wire-format.md, "UDP").
type udpServer struct {
	ln    net.PacketConn
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) }); err != nil {
		return err
	}
	return serr
}

func serveUDP(ns *netlab.Namespace, name string) (*udpServer, error) {
	addr := netip.AddrPortFrom(VIP, UDPPort)
	lc := net.ListenConfig{Control: reuseAddr}
	s := &udpServer{}
	if err := ns.Do(func() error {
		var err error
		s.ln, err = lc.ListenPacket(context.Background(), "udp4", addr.String())
		return err
	}); err != nil {
		return nil, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := s.ln.ReadFrom(buf)
			if err != nil {
				return
			}
			msg := string(buf[:n])
			var c net.Conn
			err = ns.Do(func() error {
				d := net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(addr), Control: reuseAddr}
				var err error
				c, err = d.Dial("udp4", from.String())
				return err
			})
			if err != nil {
				continue // the client retries; its flow breaks if this goes on
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			c.Write([]byte(name + ":" + msg))
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				b := make([]byte, 1500)
				for {
					n, err := c.Read(b)
					if err != nil {
						return
					}
					c.Write([]byte(name + ":" + string(b[:n])))
				}
			}()
		}
	}()
	return s, nil
}

func (s *udpServer) close() {
	if s == nil {
		return
	}
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// udpFlow is one client's long-lived UDP flow to VIP:53: a datagram every
// udpEvery, each answered by the server that answered the first. It breaks
// when another server answers (its state is lost) or none does within the
// stall timeout (each datagram is retried every udpRetry meanwhile).
func (ld *Load) udpFlow(c *loadClient, slot int) {
	defer ld.wg.Done()
	rec := ld.newRecord(c.index, "udp")
	var conn net.Conn
	err := c.ns.Do(func() error {
		d := net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IP(c.addr.AsSlice()), Port: c.ports[(slot+len(c.ports)/2)%len(c.ports)]}}
		var err error
		conn, err = d.Dial("udp4", netip.AddrPortFrom(VIP, UDPPort).String())
		return err
	})
	if err != nil {
		ld.fail(rec, c, "", err)
		return
	}
	defer conn.Close()
	buf := make([]byte, 1500)
	server := ""
	for seq := 0; !ld.stop.Load(); seq++ {
		msg := fmt.Sprintf("c%d-%d-%d", c.index, slot, seq)
		got, err := ld.udpAsk(conn, msg, buf)
		if ld.stop.Load() {
			return
		}
		if err != nil {
			ld.fail(rec, c, server, err)
			return
		}
		if server != "" && got != server {
			ld.fail(rec, c, server, fmt.Errorf("udp: answered by %s, its flow was on %s", got, server))
			return
		}
		server = got
		ld.mu.Lock()
		rec.opened = true
		ld.mu.Unlock()
		ld.done(rec, got)
		select {
		case <-ld.stopped:
			return
		case <-time.After(udpEvery):
		}
	}
}

const (
	udpEvery = 200 * time.Millisecond
	udpRetry = 250 * time.Millisecond
)

// udpAsk sends msg until an answer to it comes, at most for the stall
// timeout, and returns the server that answered.
func (ld *Load) udpAsk(conn net.Conn, msg string, buf []byte) (string, error) {
	deadline := time.Now().Add(ld.opts.Stall)
	for time.Now().Before(deadline) && !ld.stop.Load() {
		if _, err := conn.Write([]byte(msg)); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			return "", err
		}
		conn.SetReadDeadline(time.Now().Add(udpRetry))
		for {
			n, err := conn.Read(buf)
			if err != nil {
				break // retry (an ICMP port unreachable shows as ECONNREFUSED)
			}
			who, echoed, _ := strings.Cut(string(buf[:n]), ":")
			if echoed == msg {
				return who, nil
			}
		}
	}
	return "", fmt.Errorf("udp: no answer for %v", ld.opts.Stall)
}
