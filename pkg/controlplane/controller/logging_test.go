package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// lockedBuffer is a bytes.Buffer a logger and the test share.
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

// records parses one JSON record a line.
func (b *lockedBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line %q is not one JSON record: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// findRecord returns the first record with msg whose fields include want
// (values compared as fmt.Sprint gives them).
func findRecord(recs []map[string]any, msg string, want map[string]string) map[string]any {
	for _, r := range recs {
		if r["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && fmt.Sprint(r[k]) == v
		}
		if ok {
			return r
		}
	}
	return nil
}

// TestControllerLogsWithFields runs a controller with a JSON logger and
// sends it requests as `beamer ctl` does: its election, each request done
// or refused and each published generation are one record each, with the
// level their outcome deserves and the instance, server, DIP, generation
// and reason as fields, not in the message. The Cheetah keys of the
// instance's configuration appear in no record.
func TestControllerLogsWithFields(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	root := newRoot()
	ctx, cancel := context.WithCancel(storetest.Context(t))
	done := make(chan struct{})
	go func() {
		Run(ctx, shared, root, RunOptions{Options: Options{Logger: logger}, Identity: "ctl-log", ReconcileEvery: time.Hour})
		close(done)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)

	in := cheetahInstance(64)
	secret := [2]cookie.Key{{0x5ec2e7a1, 0x5ec2e7a2, 0x5ec2e7a3, 0x5ec2e7a4}, {0x0badc0de, 0x0badc0df, 0x0badc0e0, 0x0badc0e1}}
	in.Cheetah.Keys.Keys = secret
	sctx := storetest.Context(t)
	if err := Submit(sctx, shared, root, Request{Op: OpCreateInstance, Instance: "web", Config: in}, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := Submit(sctx, shared, root, Request{Op: OpAddDIP, Instance: "web", ID: 1025, Addr: dipAddr(1025), Weight: 1}, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := Submit(sctx, shared, root, Request{Op: OpAddDIP, Instance: "web", ID: 40000, Addr: dipAddr(1026), Weight: 1}, 20*time.Second); err == nil {
		t.Fatal("server id 40000 accepted for a Cheetah instance")
	}
	stop()

	recs := buf.records(t)
	if r := findRecord(recs, "elected controller", map[string]string{"level": "INFO", "identity": "ctl-log"}); r == nil {
		t.Errorf("no election record:\n%s", buf.String())
	}
	if r := findRecord(recs, "request done", map[string]string{"level": "INFO", "op": "add-dip", "instance": "web", "server": "1025", "dip": "10.0.4.1", "weight": "1"}); r == nil {
		t.Errorf("no record of add-dip 1025 with its fields:\n%s", buf.String())
	}
	r := findRecord(recs, "request refused", map[string]string{"level": "WARN", "op": "add-dip", "instance": "web", "server": "40000"})
	if r == nil || !strings.Contains(fmt.Sprint(r["reason"]), "Cheetah cookie") {
		t.Errorf("refused add-dip: record %v, want WARN with the reason:\n%s", r, buf.String())
	}
	r = findRecord(recs, "generation published", map[string]string{"level": "INFO", "instance": "web"})
	if r == nil || r["generation"] == nil || r["incarnation"] == nil {
		t.Errorf("published generation: record %v, want instance, incarnation and generation:\n%s", r, buf.String())
	}
	for _, k := range secret {
		for _, s := range []string{k.String(), fmt.Sprint(k[0]), fmt.Sprintf("%x", k[0])} {
			if strings.Contains(buf.String(), s) {
				t.Errorf("the log holds Cheetah key material %q", s)
			}
		}
	}
}
