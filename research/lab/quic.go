package lab

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
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/quic-go/quic-go"
)

// QUICPort is the lab's QUIC service on the VIP, routed by connection id
// (the instance's QUIC option) when the load has QUIC flows.
const QUICPort = 443

// labQUIC is the instance's QUIC option: servers issue CIDs of this layout.
var labQUIC = forwarding.QUICOptions{ConfigID: 0, CIDLen: 8}

// quicCIDs issues connection ids naming one server (pkg/forwarding
// QUICConnID), as a QUIC server behind Beamer runs.
type quicCIDs struct{ id forwarding.ServerID }

func (g quicCIDs) GenerateConnectionID() (quic.ConnectionID, error) {
	nonce := make([]byte, int(labQUIC.CIDLen)-3)
	if _, err := rand.Read(nonce); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(labQUIC.QUICConnID(g.id, nonce)), nil
}

func (quicCIDs) ConnectionIDLen() int { return int(labQUIC.CIDLen) }

var labCert = sync.OnceValues(func() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "beamer-lab"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"beamer-lab"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
})

const quicALPN = "beamer-lab"

var quicConfig = &quic.Config{MaxIdleTimeout: 10 * time.Second, KeepAlivePeriod: 2 * time.Second}

// quicServer answers each line of each stream with "<server>:<line>" on
// VIP:443, from one unconnected socket (as quic-go, and most QUIC servers).
type quicServer struct {
	pc net.PacketConn
	tr *quic.Transport
	l  *quic.Listener
	wg sync.WaitGroup
}

func serveQUIC(ns *netlab.Namespace, name string, id int) (*quicServer, error) {
	cert, err := labCert()
	if err != nil {
		return nil, err
	}
	s := &quicServer{}
	if err := ns.Do(func() error {
		var err error
		s.pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(VIP, QUICPort).String())
		return err
	}); err != nil {
		return nil, err
	}
	s.tr = &quic.Transport{Conn: s.pc, ConnectionIDGenerator: quicCIDs{forwarding.ServerID(id)}}
	if s.l, err = s.tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{quicALPN}}, quicConfig); err != nil {
		s.pc.Close()
		return nil, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.l.Accept(context.Background())
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				for {
					st, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					r := bufio.NewReader(st)
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							break
						}
						if _, err := fmt.Fprintf(st, "%s:%s", name, line); err != nil {
							break
						}
					}
				}
			}()
		}
	}()
	return s, nil
}

func (s *quicServer) close() {
	if s == nil {
		return
	}
	s.l.Close()
	s.tr.Close()
	s.pc.Close()
	s.wg.Wait()
}

// quicFlow is one client's QUIC connection: a line every udpEvery on one
// stream, each answered by the server that answered the first; once, a
// few seconds in, the client migrates to a new socket (a new source port:
// another 5-tuple, another bucket, maybe another mux). It breaks when
// another server answers, when nothing comes within the stall timeout, or
// when the migration fails.
func (ld *Load) quicFlow(c *loadClient, slot int) {
	defer ld.wg.Done()
	rec := ld.newRecord(c.index, "quic")
	listen := func() (*net.UDPConn, error) {
		var pc *net.UDPConn
		err := c.ns.Do(func() error {
			var err error
			pc, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IP(c.addr.AsSlice())})
			return err
		})
		return pc, err
	}
	pc, err := listen()
	if err != nil {
		ld.fail(rec, c, "", err)
		return
	}
	tr := &quic.Transport{Conn: pc}
	defer func() { tr.Close(); pc.Close() }()
	ctx, cancel := context.WithTimeout(ld.ctx, ld.opts.Stall)
	conn, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(netip.AddrPortFrom(VIP, QUICPort)),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{quicALPN}}, quicConfig)
	cancel()
	if err != nil {
		ld.fail(rec, c, "", fmt.Errorf("quic: %w", err))
		return
	}
	defer conn.CloseWithError(0, "")
	st, err := conn.OpenStream()
	if err != nil {
		ld.fail(rec, c, "", fmt.Errorf("quic: %w", err))
		return
	}
	r := bufio.NewReader(st)
	server := ""
	migrateAt := time.Now().Add(2*time.Second + time.Duration(slot)*300*time.Millisecond)
	for seq := 0; !ld.stop.Load(); seq++ {
		if !migrateAt.IsZero() && time.Now().After(migrateAt) {
			migrateAt = time.Time{}
			if err := ld.migrate(conn, listen); err != nil {
				ld.fail(rec, c, server, err)
				return
			}
		}
		msg := fmt.Sprintf("q%d-%d-%d", c.index, slot, seq)
		st.SetDeadline(time.Now().Add(ld.opts.Stall))
		_, err := fmt.Fprintf(st, "%s\n", msg)
		var line string
		if err == nil {
			line, err = r.ReadString('\n')
		}
		if ld.stop.Load() {
			return
		}
		if err != nil {
			ld.fail(rec, c, server, fmt.Errorf("quic: %w", err))
			return
		}
		who, echoed, _ := strings.Cut(strings.TrimSpace(line), ":")
		if echoed != msg || (server != "" && who != server) {
			ld.fail(rec, c, server, fmt.Errorf("quic: %q answered %q, its connection was on %s", who, echoed, server))
			return
		}
		server = who
		ld.mu.Lock()
		rec.opened = true
		ld.mu.Unlock()
		ld.done(rec, who)
		select {
		case <-ld.stopped:
			return
		case <-time.After(udpEvery):
		}
	}
}

// migrate moves conn to a new client socket, probing the path first (RFC
// 9000 §9).
func (ld *Load) migrate(conn *quic.Conn, listen func() (*net.UDPConn, error)) error {
	pc, err := listen()
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: pc}
	go func() { <-ld.stopped; tr.Close(); pc.Close() }()
	p, err := conn.AddPath(tr)
	if err != nil {
		return fmt.Errorf("quic migration: %w", err)
	}
	ctx, cancel := context.WithTimeout(ld.ctx, ld.opts.Stall)
	defer cancel()
	if err := p.Probe(ctx); err != nil {
		return fmt.Errorf("quic migration: probing the new path: %w", err)
	}
	return p.Switch()
}
