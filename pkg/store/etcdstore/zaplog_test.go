package etcdstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestEtcdLogReachesLogger: the embedded etcd server and the etcd client
// log their warnings to the slog loggers they are given, as records with
// etcd's fields; a client refused for a wrong password is one of them,
// and neither the wrong nor the right password appears in any record;
// closing the server adds no error record (its listeners ending is the
// close, not a failure).
func TestEtcdLogReachesLogger(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := etcdstore.StartEmbedded(etcdstore.EmbedConfig{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0",
		Logger: logger.With("side", "server")})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			e.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const right, wrong = "s3cret-Pa55-right", "s3cret-Pa55-wrong"
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", right); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	open := func(pass string) (*etcdstore.Store, error) {
		return etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{e.Endpoint()}, Username: "root", Password: pass,
			DialTimeout: 3 * time.Second, LeaseTTL: 2 * time.Second, Logger: logger.With("side", "client")})
	}
	if s, err := open(wrong); err == nil {
		s.Close()
		t.Fatal("wrong password accepted")
	}
	s, err := open(right)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	beforeClose := len(strings.Split(strings.TrimSpace(buf.String()), "\n"))
	e.Close()
	closed = true

	sides := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		if r["level"] != "WARN" && r["level"] != "ERROR" {
			t.Errorf("record below warning level: %s", l)
		}
		if i >= beforeClose && r["level"] == "ERROR" {
			t.Errorf("error record from closing the server: %s", l)
		}
		if r["level"] == "WARN" && r["error"] != nil {
			sides[r["side"].(string)] = true
		}
		if strings.Contains(l, "s3cret") {
			t.Errorf("a password in the log: %s", l)
		}
	}
	if !sides["server"] || !sides["client"] {
		t.Errorf("want warnings with etcd's error field from the server and the client (the refused password); got %v in:\n%s", sides, buf.String())
	}
}
