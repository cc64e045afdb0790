package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestEmbeddedMutualTLS: an embedded etcd serving mutual TLS answers
// clients holding a certificate of its CA (by etcd:// and by embed://
// through the endpoint file) and refuses those without one, with one from
// another CA, and plaintext.
func TestEmbeddedMutualTLS(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	dir := t.TempDir()
	client := fmt.Sprintf("ca=%s&cert=%s&key=%s", c.CA, c.ClientCert, c.ClientKey)
	owner := fmt.Sprintf("embed://%s?client=127.0.0.1:0&peer=127.0.0.1:0&server-cert=%s&server-key=%s&client-ca=%s&%s",
		dir, c.ServerCert, c.ServerKey, c.CA, client)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, _, err := Open(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Commit(ctx, store.Put("/tls/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, etcdstore.EndpointFile))
	if err != nil {
		t.Fatal(err)
	}
	ep := strings.TrimSpace(string(b))
	if !strings.HasPrefix(ep, "https://127.0.0.1:") {
		t.Fatalf("endpoint file: %q", ep)
	}
	hostport := strings.TrimPrefix(ep, "https://")
	read := func(url string) error {
		s, _, err := Open(ctx, url)
		if err != nil {
			return err
		}
		defer s.Close()
		it, err := s.Get(ctx, "/tls/k")
		if err == nil && string(it.Value) != "v" {
			err = fmt.Errorf("read %q", it.Value)
		}
		return err
	}
	for _, good := range []string{
		"etcd://" + hostport + "?" + client,
		"embed://" + dir + "?" + client,
	} {
		if err := read(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	// The reasons come from etcdstore's diagnosis (gRPC alone says
	// "context deadline exceeded"). Go's client sends no certificate the
	// server's CA did not sign, hence "certificate required" for both.
	for what, bad := range map[string]struct{ url, why string }{
		"no client certificate": {"etcd://" + hostport + "?timeout=1s&ca=" + c.CA, "(TLS: remote error: tls: certificate required)"},
		"another CA's client": {fmt.Sprintf("etcd://%s?timeout=1s&ca=%s&cert=%s&key=%s", hostport, c.CA, c.RogueCert, c.RogueKey),
			"(TLS: remote error: tls: certificate required)"},
		"plaintext": {"etcd://" + hostport + "?timeout=1s", "(the server speaks TLS: give the store URL ca= (and cert=, key= if it asks for a client certificate))"},
	} {
		err := read(bad.url)
		if err == nil || !strings.HasSuffix(err.Error(), bad.why) {
			t.Errorf("%s: %v, want it to end with %s", what, err, bad.why)
		}
	}
	err = read("embed://" + dir)
	want := fmt.Sprintf("etcdstore: the embedded etcd of %s serves TLS (%s): this process needs the CA and a client certificate (store URL ca=, cert=, key=)", dir, ep)
	if err == nil || err.Error() != want {
		t.Errorf("embed:// without client TLS:\n got %v\nwant %s", err, want)
	}
}

// TestInsecureRefused: the rules of secure.go, with their messages.
func TestInsecureRefused(t *testing.T) {
	hint := `docs/control-plane.md, "Securing the store"`
	refused := map[string]string{
		"etcd://198.18.0.1:2379":                                       "plaintext etcd connection to 198.18.0.1:2379, which is not a loopback address: anyone on the network could read and rewrite the store; use TLS (ca=, cert=, key=; " + hint + ") or pass --insecure",
		"etcd://127.0.0.1:2379,store.example:2379":                     "plaintext etcd connection to store.example:2379, which is not a loopback address: anyone on the network could read and rewrite the store; use TLS (ca=, cert=, key=; " + hint + ") or pass --insecure",
		"zk://198.18.0.1:2181":                                         "plaintext ZooKeeper (digest authentication sends the password in clear) connection to 198.18.0.1:2181, which is not a loopback address: anyone on the network could read and rewrite the store; use TLS (ca=, cert=, key=; " + hint + ") or pass --insecure",
		"embed:///d?client=0.0.0.0:2379":                               "the embedded etcd would serve clients on 0.0.0.0:2379, which is not a loopback address, without mutual TLS: anyone on the network could read and rewrite the store; give server-cert=, server-key= and client-ca= (" + hint + ") or pass --insecure",
		"embed:///d?client=198.18.0.1:2379&server-cert=s&server-key=k": "the embedded etcd would serve clients on 198.18.0.1:2379, which is not a loopback address, without mutual TLS: anyone on the network could read and rewrite the store; give server-cert=, server-key= and client-ca= (" + hint + ") or pass --insecure",
		"embed:///d?peer=198.18.0.1:2380":                              "the embedded etcd's peer traffic would go to 198.18.0.1:2380, which is not a loopback address, without mutual TLS: anyone on the network could join the cluster or read its replication; give peer-cert=, peer-key= and peer-ca= (" + hint + ") or pass --insecure",
	}
	for raw, want := range refused {
		tg, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = tg.checkSecure(Options{})
		if !errors.Is(err, ErrInsecure) || err.Error() != "insecure store: "+want {
			t.Errorf("%s:\n got %v\nwant insecure store: %s", raw, err, want)
		}
		if err := tg.checkSecure(Options{Insecure: true}); err != nil {
			t.Errorf("%s with --insecure: %v", raw, err)
		}
	}
	for _, ok := range []string{
		"embed:///var/lib/beamer", "embed:///d?client=127.0.0.1:2379", "embed:///d?client=localhost:0",
		"etcd://127.0.0.1:2379,localhost:2379", "zk://localhost:2181",
		"etcd://198.18.0.1:2379?ca=/ca.pem", "etcd://198.18.0.1:2379?tls=true",
		"embed:///d?client=198.18.0.1:2379&server-cert=s&server-key=k&client-ca=ca",
	} {
		tg, err := Parse(ok)
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.checkSecure(Options{}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
