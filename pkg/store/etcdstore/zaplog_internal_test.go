package etcdstore

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
)

// TestSlogCore feeds the zap → slog bridge directly: below warning nothing
// passes; a warning keeps its message, the logger's name and every field
// (errors as their text, numbers as numbers, fields given by With); an
// error is an error, its repeat within repeatEvery a debug record; once
// the server stops, its lines are debug records.
func TestSlogCore(t *testing.T) {
	var buf bytes.Buffer
	stopping := new(atomic.Bool)
	zl := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})), stopping)
	zl.Info("elected leader", zap.String("member", "beamer"))
	zl.Debug("chatty")
	zl.Named("raft").With(zap.String("local-member-id", "8e9e05c52164694d")).Warn("slow fdatasync",
		zap.Duration("took", 1500*1e6), zap.Int("attempt", 3), zap.Error(errors.New("disk busy")))
	zl.Error("lease keepalive failed", zap.Error(errors.New("context canceled")))
	zl.Error("lease keepalive failed", zap.Error(errors.New("context canceled"))) // a repeat within repeatEvery
	stopping.Store(true)
	zl.Error("setting up serving from embedded etcd failed.", zap.Error(errors.New("http: Server closed")))
	zl.Warn("Running http and grpc server on single port. This is not recommended for production.")
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="slow fdatasync" local-member-id=8e9e05c52164694d logger=raft attempt=3 error="disk busy" took=1.5s`,
		`level=ERROR msg="lease keepalive failed" error="context canceled"`,
		`level=DEBUG msg="lease keepalive failed" error="context canceled"`,
		`level=DEBUG msg="setting up serving from embedded etcd failed." error="http: Server closed"`,
		`level=DEBUG msg="Running http and grpc server on single port. This is not recommended for production."`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if zapLogger(nil, nil).Core().Enabled(zap.ErrorLevel) {
		t.Error("a nil logger must discard")
	}
}
