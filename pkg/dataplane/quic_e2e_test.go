package dataplane

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/quic-go/quic-go"
)

const e2eQUICPort = 443

var e2eQUIC = forwarding.QUICOptions{ConfigID: 1, CIDLen: 8, Ports: forwarding.PortRange{Low: e2eQUICPort, High: e2eQUICPort}}

// beamerCIDs issues connection ids of the instance's layout naming one
// server (pkg/forwarding QUICConnID): what a QUIC server behind Beamer
// runs, and all it needs to be reached by id.
type beamerCIDs struct {
	q  *forwarding.QUICOptions
	id forwarding.ServerID
}

func (g beamerCIDs) GenerateConnectionID() (quic.ConnectionID, error) {
	nonce := make([]byte, int(g.q.CIDLen)-3)
	if _, err := rand.Read(nonce); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(g.q.QUICConnID(g.id, nonce)), nil
}

func (g beamerCIDs) ConnectionIDLen() int { return int(g.q.CIDLen) }

func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "beamer-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"beamer-test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

var quicTimeouts = &quic.Config{MaxIdleTimeout: 3 * time.Second, HandshakeIdleTimeout: 3 * time.Second}

// serveQUIC runs a QUIC echo server on VIP:443 (one unconnected socket, as
// quic-go and most QUIC servers have): each line on a stream is answered
// with "<server>:<line>".
func serveQUIC(t *testing.T, ns *netlab.Namespace, name string, id forwarding.ServerID, cert tls.Certificate) {
	var pc net.PacketConn
	must(t, ns.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(e2eVIP, e2eQUICPort).String())
		return err
	}))
	tr := &quic.Transport{Conn: pc, ConnectionIDGenerator: beamerCIDs{&e2eQUIC, id}}
	l, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"beamer-echo"}}, quicTimeouts)
	must(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); tr.Close(); pc.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					s, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					r := bufio.NewReader(s)
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							break
						}
						if _, err := fmt.Fprintf(s, "%s:%s", name, line); err != nil {
							break
						}
					}
				}
			}()
		}
	}()
}

// quicClient is one QUIC connection of the client with a stream on it.
type quicClient struct {
	conn *quic.Conn
	s    *quic.Stream
	r    *bufio.Reader
}

func (e *e2eNet) quicUDP(t *testing.T) *net.UDPConn {
	var c *net.UDPConn
	must(t, e.client.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP(e2eClient.AsSlice())})
		return err
	}))
	t.Cleanup(func() { c.Close() })
	return c
}

func (e *e2eNet) dialQUIC(t *testing.T) *quicClient {
	tr := &quic.Transport{Conn: e.quicUDP(t)}
	t.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(netip.AddrPortFrom(e2eVIP, e2eQUICPort)),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"beamer-echo"}}, quicTimeouts)
	must(t, err)
	t.Cleanup(func() { c.CloseWithError(0, "") })
	s, err := c.OpenStreamSync(ctx)
	must(t, err)
	return &quicClient{conn: c, s: s, r: bufio.NewReader(s)}
}

func (q *quicClient) ask(msg string) (string, error) {
	q.s.SetDeadline(time.Now().Add(4 * time.Second))
	if _, err := fmt.Fprintf(q.s, "%s\n", msg); err != nil {
		return "", err
	}
	line, err := q.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	who, echoed, _ := strings.Cut(strings.TrimSpace(line), ":")
	if echoed != msg {
		return "", fmt.Errorf("answer %q to %q", line, msg)
	}
	return who, nil
}

// migrate moves the connection to a new client socket (a new source port:
// another 5-tuple, another bucket), probing the path first as RFC 9000 §9
// asks.
func (e *e2eNet) migrate(t *testing.T, q *quicClient) error {
	tr := &quic.Transport{Conn: e.quicUDP(t)}
	t.Cleanup(func() { tr.Close() })
	p, err := q.conn.AddPath(tr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if err := p.Probe(ctx); err != nil {
		return fmt.Errorf("probing the new path: %w", err)
	}
	return p.Switch()
}

// TestEndToEndQUIC: QUIC connections (quic-go) through a real mux with the
// instance's QUIC option: their packets carry connection ids naming server
// A, so when every bucket moves to B and then each client migrates to a new
// source port (another bucket again), every connection keeps reaching A,
// statelessly, with no daisy chaining. New connections' first packets go
// by bucket (to B), and then by B's ids. Without the option the same
// moves break the connections (quic-go's sockets are unconnected, so
// chaining cannot find them): the test can see a break.
func TestEndToEndQUIC(t *testing.T) {
	t.Run("cid", func(t *testing.T) { quicMigration(t, true) })
	t.Run("buckets only", func(t *testing.T) { quicMigration(t, false) })
}

func quicMigration(t *testing.T, byCID bool) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, table: allToA, instance: func(in *forwarding.Instance) {
		in.Services = append(in.Services, forwarding.Service{Protocol: forwarding.UDP,
			Ports: forwarding.PortList{{Low: e2eQUICPort, High: e2eQUICPort}}})
		if byCID {
			q := e2eQUIC
			in.QUIC = &q
		}
	}})
	cert := selfSigned(t)
	for name, ns := range e.servers {
		serveQUIC(t, ns, name, e2eID[name], cert)
	}
	const n = 4
	var cs []*quicClient
	for i := 0; i < n; i++ {
		c := e.dialQUIC(t)
		if who, err := c.ask(fmt.Sprint("hello-", i)); err != nil || who != "a" {
			t.Fatalf("connection %d: served by %q, %v", i, who, err)
		}
		cs = append(cs, c)
	}
	before, err := e.mux.Counters()
	must(t, err)
	e.moveAll(t, "a", "b", time.Now())
	broken := 0
	for i, c := range cs {
		who, err := c.ask(fmt.Sprint("moved-", i))
		if err == nil && who == "a" {
			err = e.migrate(t, c)
		}
		if err == nil {
			who, err = c.ask(fmt.Sprint("migrated-", i))
		}
		if err != nil || who != "a" {
			broken++
			if byCID {
				t.Fatalf("connection %d broke after the bucket move and a migration: served by %q, %v", i, who, err)
			}
			break // one break shows what the option is for
		}
	}
	if !byCID {
		if broken == 0 {
			t.Fatal("without the QUIC option no connection broke: the test cannot tell CID routing from buckets")
		}
		return
	}
	after, err := e.mux.Counters()
	must(t, err)
	if d := after["fwd_quic_cid"] - before["fwd_quic_cid"]; d < 4*n {
		t.Errorf("mux forwarded %d packets by connection id, want at least %d", d, 4*n)
	}
	if d := e.counter(t, "b", "chained"); d != 0 {
		t.Errorf("B chained %d packets: CID-routed packets should never need it", d)
	}
	c := e.dialQUIC(t)
	if who, err := c.ask("new"); err != nil || who != "b" {
		t.Fatalf("new connection after the move: served by %q, %v, want b", who, err)
	}
}
