package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestClusterURL: the embedded store's cluster parameters reach the
// member's configuration, and what cannot work is refused by Parse.
func TestClusterURL(t *testing.T) {
	tg, err := Parse("embed:///d?name=b&peer=127.0.0.1:2380&peer-advertise=localhost:2380&initial-cluster=a=127.0.0.1:2380,b=localhost:2380&cluster-state=existing&cluster-token=t1&peer-cert=p.pem&peer-key=p.key&peer-ca=ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	c := tg.embedConfig()
	if c.Name != "b" || c.PeerAdvertiseAddr != "localhost:2380" || c.InitialCluster != "a=127.0.0.1:2380,b=localhost:2380" || !c.Join ||
		c.ClusterToken != "t1" || c.PeerTLS == nil || c.PeerTLS.CertFile != "p.pem" || c.PeerTLS.KeyFile != "p.key" || c.PeerTLS.ClientCAFile != "ca.pem" {
		t.Errorf("member configuration: %+v (peer TLS %+v)", c, c.PeerTLS)
	}
	if c := mustParse(t, "embed:///var/lib/beamer").embedConfig(); c.Name != "" || c.InitialCluster != "" || c.Join || c.PeerTLS != nil {
		t.Errorf("the default store is a cluster: %+v", c)
	}
	bad := map[string]string{
		"embed:///d?initial-cluster=a=127.0.0.1:2380":                                    "initial-cluster= needs this member's name=",
		"embed:///d?name=a&cluster-state=existing":                                       "cluster-state=existing needs initial-cluster=",
		"embed:///d?cluster-state=old":                                                   `cluster-state "old": want new`,
		"embed:///d?name=a&peer-cert=p.pem&peer-key=k.pem":                               "peer TLS is mutual: give peer-cert=, peer-key= and peer-ca= together",
		"embed:///d?name=a&initial-cluster=a=https://127.0.0.1:2380":                     "initial-cluster member a is https://127.0.0.1:2380, but peer TLS is off",
		"embed:///d?name=a&initial-cluster=a,b=127.0.0.1:1":                              `initial-cluster entry "a": want NAME=HOST:PORT`,
		"embed:///d?name=a&initial-cluster=a=127.0.0.1:1,a=127.0.0.1:2":                  "initial-cluster names a twice",
		"embed:///d?name=a&initial-cluster=a=127.0.0.1&peer-cert=p&peer-key=k&peer-ca=c": `initial-cluster member a: "https://127.0.0.1" is not https://HOST:PORT`,
	}
	for raw, want := range bad {
		_, err := Parse(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant …%s…", raw, err, want)
		}
	}
}

// TestClusterPeerTLSRequired: peer traffic off loopback without peer
// mutual TLS is refused before anything starts, whichever of the peer
// addresses is remote; with peer TLS (and client mutual TLS for a remote
// client port) it is accepted.
func TestClusterPeerTLSRequired(t *testing.T) {
	want := func(p string) string {
		return "insecure store: the embedded etcd's peer traffic would go to " + p + ", which is not a loopback address, without mutual TLS: anyone on the network could join the cluster or read its replication; give peer-cert=, peer-key= and peer-ca= (docs/control-plane.md, \"Securing the store\") or pass --insecure"
	}
	refused := map[string]string{
		"embed:///d?peer=198.18.0.1:2380":                                                                    "198.18.0.1:2380",
		"embed:///d?peer=0.0.0.0:2380":                                                                       "0.0.0.0:2380",
		"embed:///d?name=a&peer=127.0.0.1:2380&peer-advertise=198.18.0.1:2380":                               "198.18.0.1:2380",
		"embed:///d?name=a&peer=127.0.0.1:2380&initial-cluster=a=127.0.0.1:2380,b=198.18.0.2:2380":           "198.18.0.2:2380",
		"embed:///d?name=a&peer=127.0.0.1:2380&initial-cluster=a=127.0.0.1:2380,b=http://[2001:db8::2]:2380": "[2001:db8::2]:2380",
	}
	for raw, p := range refused {
		err := Check(raw, Options{})
		if !errors.Is(err, ErrInsecure) || !strings.HasSuffix(err.Error(), want(p)) {
			t.Errorf("%s:\n got %v\nwant …%s", raw, err, want(p))
		}
		if err := Check(raw, Options{Insecure: true}); err != nil {
			t.Errorf("%s with --insecure: %v", raw, err)
		}
	}
	for _, ok := range []string{
		"embed:///d?name=a&peer=198.18.0.1:2380&initial-cluster=a=198.18.0.1:2380,b=198.18.0.2:2380&peer-cert=p&peer-key=k&peer-ca=c",
		"embed:///d?name=a&client=198.18.0.1:2379&server-cert=s&server-key=k&client-ca=c&peer=0.0.0.0:2380&peer-advertise=198.18.0.1:2380&initial-cluster=a=198.18.0.1:2380&peer-cert=p&peer-key=k&peer-ca=c",
		"embed:///d?name=a&peer=127.0.0.1:2380&initial-cluster=a=127.0.0.1:2380,b=127.0.0.1:2480",
	} {
		if err := Check(ok, Options{}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func mustParse(t *testing.T, raw string) *Target {
	t.Helper()
	tg, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestEmbeddedClusterByURL: three `beamer controller` store URLs, one per
// member (peer and client mutual TLS), form a cluster; another process's
// embed:// on a member's directory (ConnectOnly, as `beamer store members`)
// lists every member from the endpoint file and keeps writing once that
// member is stopped, as does an etcd:// URL listing every member (a mux's).
func TestEmbeddedClusterByURL(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	names := []string{"a", "b", "c"}
	addrs := storetest.FreeAddrs(t, 2*len(names))
	var ms []*storetest.ClusterMember
	for i, n := range names {
		ms = append(ms, &storetest.ClusterMember{Name: n, Dir: t.TempDir(), PeerAddr: addrs[2*i], ClientAddr: addrs[2*i+1]})
	}
	initial := storetest.InitialCluster(ms...)
	client := fmt.Sprintf("ca=%s&cert=%s&key=%s", c.CA, c.ClientCert, c.ClientKey)
	url := func(m *storetest.ClusterMember) string {
		return fmt.Sprintf("embed://%s?name=%s&client=%s&peer=%s&initial-cluster=%s&server-cert=%s&server-key=%s&client-ca=%s&peer-cert=%s&peer-key=%s&peer-ca=%s&%s",
			m.Dir, m.Name, m.ClientAddr, m.PeerAddr, initial, c.ServerCert, c.ServerKey, c.CA, c.ServerCert, c.ServerKey, c.CA, client)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stores := make([]store.Store, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], _, errs[i] = Open(ctx, url(m))
		}()
	}
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
		if errs[i] != nil {
			t.Fatalf("member %s: %v", names[i], errs[i])
		}
	}
	if err := stores[0].Commit(ctx, store.Put("/c/k", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	if it, err := stores[1].Get(ctx, "/c/k"); err != nil || string(it.Value) != "1" {
		t.Fatalf("read through b: %q, %v", it.Value, err)
	}
	other, _, err := OpenWith(ctx, "embed://"+ms[0].Dir+"?"+client, Options{ConnectOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stores[0].Close() // member a stops
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	if err := other.Commit(wctx, store.Put("/c/k", []byte("2"))); err != nil {
		t.Fatalf("write through the endpoint file's list with a stopped: %v", err)
	}
	// A mux's URL lists every member; the first is the stopped one.
	mux, _, err := Open(ctx, fmt.Sprintf("etcd://%s,%s,%s?%s", ms[0].ClientAddr, ms[1].ClientAddr, ms[2].ClientAddr, client))
	if err != nil {
		t.Fatalf("etcd:// listing a stopped member first: %v", err)
	}
	defer mux.Close()
	if err := mux.Commit(wctx, store.Put("/c/m", []byte("m"))); err != nil {
		t.Fatalf("write through etcd:// with a stopped: %v", err)
	}
	if it, err := stores[2].Get(ctx, "/c/k"); err != nil || string(it.Value) != "2" {
		t.Fatalf("read through c: %q, %v", it.Value, err)
	}
	// No process serves a's directory now: ConnectOnly refuses to start one.
	if s, _, err := OpenWith(ctx, "embed://"+ms[0].Dir+"?timeout=2s&"+client, Options{ConnectOnly: true}); err == nil {
		s.Close()
		t.Fatal("ConnectOnly started or reached a stopped member")
	}
	// a's controller was killed: its endpoint file stayed, naming a first.
	// Started again with the same URL, it serves a again (restarted from
	// its data) rather than only connecting to b and c, which answer.
	stale := strings.Join([]string{"https://" + ms[0].ClientAddr, "https://" + ms[1].ClientAddr, "https://" + ms[2].ClientAddr}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(ms[0].Dir, etcdstore.EndpointFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	again, _, err := Open(ctx, url(ms[0]))
	if err != nil {
		t.Fatalf("a restarted: %v", err)
	}
	defer again.Close()
	onlyA, _, err := Open(ctx, fmt.Sprintf("etcd://%s?%s", ms[0].ClientAddr, client))
	if err != nil {
		t.Fatalf("a's own client port after the restart: %v", err)
	}
	defer onlyA.Close()
	if it, err := onlyA.Get(ctx, "/c/m"); err != nil || string(it.Value) != "m" {
		t.Fatalf("read through the restarted a: %q, %v", it.Value, err)
	}
}
