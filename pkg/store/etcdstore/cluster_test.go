package etcdstore_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestEmbeddedCluster: three embedded members with peer and client mutual
// TLS replicate the store: a write through one member is read through
// another; with one member stopped, a client listing every member (the
// dead one first) still writes; the dead member is removed and a fourth
// joins, reading what was written before it existed.
func TestEmbeddedCluster(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	ms := storetest.StartCluster(t, c, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := func(eps ...string) *etcdstore.Store {
		t.Helper()
		s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: eps, TLS: c.ClientTLS(t), DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("open %v: %v", eps, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	read := func(s *etcdstore.Store, key, want string) {
		t.Helper()
		it, err := s.Get(ctx, key)
		if err != nil || string(it.Value) != want {
			t.Fatalf("get %s: %q, %v; want %q", key, it.Value, err, want)
		}
	}
	a, b := open(ms[0].Endpoint()), open(ms[1].Endpoint())
	if err := a.Commit(ctx, store.Put("/cluster/k", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	read(b, "/cluster/k", "1")
	// The endpoint file lists this member first, then the others.
	file, err := os.ReadFile(ms[0].Dir + "/" + etcdstore.EndpointFile)
	if err != nil {
		t.Fatal(err)
	}
	if eps := strings.Fields(string(file)); len(eps) != 3 || eps[0] != ms[0].Endpoint() || !slices.Contains(eps, ms[2].Endpoint()) {
		t.Errorf("endpoint file of a: %q", file)
	}
	members, err := a.Members(ctx)
	if err != nil || len(members) != 3 {
		t.Fatalf("members: %v, %v", members, err)
	}

	all := open(ms[0].Endpoint(), ms[1].Endpoint(), ms[2].Endpoint())
	ms[2].Stop()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	if err := all.Commit(wctx, store.Put("/cluster/k", []byte("2"))); err != nil {
		t.Fatalf("write with c dead: %v", err)
	}
	wcancel()
	deadFirst := open(ms[2].Endpoint(), ms[1].Endpoint(), ms[0].Endpoint())
	if err := deadFirst.Commit(ctx, store.Put("/cluster/j", []byte("x"))); err != nil {
		t.Fatalf("client listing the dead member first: %v", err)
	}
	read(b, "/cluster/k", "2")

	// Replace the dead member: remove it first (etcd refuses to add a
	// member while that would leave too few running for a quorum), then
	// add d and start it joining.
	if m, err := all.RemoveMember(ctx, "c"); err != nil || m.Name != "c" {
		t.Fatalf("remove c: %v, %v", m, err)
	}
	d := storetest.NewClusterMember(t, "d")
	initial, err := all.AddMember(ctx, "d", d.PeerAddr)
	if err != nil {
		t.Fatal(err)
	}
	if want := storetest.InitialCluster(ms[0], ms[1], d); !sameMembers(initial, want) {
		t.Fatalf("initial cluster for d: %s, want %s", initial, want)
	}
	d.Embedded, err = etcdstore.StartEmbedded(d.Config(c, initial, true))
	if err != nil {
		t.Fatalf("d joining: %v", err)
	}
	t.Cleanup(d.Stop)
	ds := open(d.Endpoint())
	read(ds, "/cluster/k", "2")
	if err := ds.Commit(ctx, store.Put("/cluster/d", []byte("d"))); err != nil {
		t.Fatal(err)
	}
	read(a, "/cluster/d", "d")
	members, err = ds.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a", "b", "d"}) {
		t.Errorf("members after the replacement: %v", names)
	}
	if _, err := ds.RemoveMember(ctx, "nobody"); err == nil {
		t.Error("removing an unknown member succeeded")
	}
}

func sameMembers(x, y string) bool {
	a, b := strings.Split(x, ","), strings.Split(y, ",")
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestEmbeddedClusterRefusesStrangers: a member's peer port takes only
// peers with a certificate of the cluster's CA: a TLS connection without
// one or with another CA's certificate fails, and a member holding
// another CA's certificate cannot join even once added.
func TestEmbeddedClusterRefusesStrangers(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	ms := storetest.StartCluster(t, c, "a", "b", "c")
	peer := ms[0].PeerAddr
	handshake := func(cfg *tls.Config) error {
		cfg.ServerName = "127.0.0.1"
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", peer, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		// TLS 1.3: a refused client certificate shows on the first read.
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("GET /members HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	if err := handshake(c.PeerDialTLS(t, c.ServerCert, c.ServerKey)); err != nil {
		t.Fatalf("a member's own certificate: %v", err)
	}
	for what, cfg := range map[string]*tls.Config{
		"no certificate":           c.PeerDialTLS(t, "", ""),
		"another CA's certificate": c.PeerDialTLS(t, c.RoguePeerCert, c.RoguePeerKey),
	} {
		err := handshake(cfg)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v, want a refused certificate", what, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{ms[0].Endpoint()}, TLS: c.ClientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := storetest.NewClusterMember(t, "e")
	initial, err := s.AddMember(ctx, "e", e.PeerAddr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Config(c, initial, true)
	cfg.PeerTLS = &etcdstore.ServerTLS{CertFile: c.RoguePeerCert, KeyFile: c.RoguePeerKey, ClientCAFile: c.RogueCA}
	cfg.StartTimeout = 15 * time.Second
	start := time.Now()
	if em, err := etcdstore.StartEmbedded(cfg); err == nil {
		em.Close()
		t.Fatal("a member with another CA's certificate joined")
	} else {
		t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	// Never started, so it has no name: removed by its peer address.
	if _, err := s.RemoveMember(ctx, e.PeerAddr); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Put("/cluster/after", []byte("ok"))); err != nil {
		t.Fatalf("the cluster after the stranger: %v", err)
	}
}
