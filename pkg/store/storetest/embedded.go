package storetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
)

// Embedded starts an embedded etcd for a test package, on free ports in a
// temporary directory, and opens a store on it. Close the store, stop the
// Embedded and close the store (TestMain has no t.Cleanup).
func Embedded(dir string) (*etcdstore.Store, *etcdstore.Embedded, error) {
	e, err := etcdstore.StartEmbedded(etcdstore.EmbedConfig{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{e.Endpoint()}, LeaseTTL: 2 * time.Second})
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	return s, e, nil
}

// EmbeddedT is Embedded for one test, stopped by t.Cleanup.
func EmbeddedT(t testing.TB) *etcdstore.Store {
	t.Helper()
	s, e, err := Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); e.Close() })
	return s
}

// MainWithEmbedded runs a test package's tests with *s set to a store on
// an embedded etcd shared by the whole package, and stops it afterwards.
// Call it from TestMain: os.Exit(storetest.MainWithEmbedded(m, &shared)).
func MainWithEmbedded(m *testing.M, s *store.Store) int {
	dir, err := os.MkdirTemp("", "beamer-test-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	st, e, err := Embedded(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	defer st.Close()
	*s = st
	return m.Run()
}
