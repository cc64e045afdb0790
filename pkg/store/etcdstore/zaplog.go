package etcdstore

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"
)

// etcd, the embedded server and the client alike, logs through zap. Its
// warnings and errors (a slow disk, a lost lease, a TLS handshake refused)
// are the store's health, so they go to the process's slog logger instead
// of nowhere; below warning, etcd is chatty (every election step, every
// compaction) and says nothing an operator acts on. In a store outage the
// client warns at every retried request: each message passes at most once
// per repeatEvery, the repeats are debug records.

// zapLogger returns a zap logger writing etcd's warnings and errors to l
// (nothing when l is nil). Once stopping is set (nil: never), they are
// debug records: a server being closed reports every listener it loses
// as an error ("setting up serving from embedded etcd failed … server
// closed"), which is the close, not a failure.
func zapLogger(l *slog.Logger, stopping *atomic.Bool) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{h: l.Handler(), min: zapcore.WarnLevel, stopping: stopping, repeats: &repeats{by: map[string]*rate.Sometimes{}}})
}

// repeatEvery bounds how often one etcd message is logged above debug.
const repeatEvery = 10 * time.Second

// maxRepeatKinds bounds the messages tracked (etcd's are constants; a
// bound keeps a surprise from growing the map): beyond, they share one.
const maxRepeatKinds = 256

// repeats lets each message through once per repeatEvery.
type repeats struct {
	mu sync.Mutex
	by map[string]*rate.Sometimes
}

// first tells whether msg may be logged at its level now.
func (r *repeats) first(msg string) bool {
	r.mu.Lock()
	s := r.by[msg]
	if s == nil {
		if len(r.by) >= maxRepeatKinds {
			msg = ""
		}
		if s = r.by[msg]; s == nil {
			s = &rate.Sometimes{Interval: repeatEvery}
			r.by[msg] = s
		}
	}
	r.mu.Unlock()
	ok := false
	s.Do(func() { ok = true })
	return ok
}

// slogCore is a zapcore.Core handing each entry to a slog.Handler as one
// record: zap's message, its level, its fields as attributes (the logger
// name as "logger").
type slogCore struct {
	h        slog.Handler
	min      zapcore.Level
	stopping *atomic.Bool
	repeats  *repeats // shared by the cores With derives
}

// benign are etcd warnings about choices beamer made on purpose: they
// would greet the operator at every start with nothing to act on, so they
// are debug records.
var benign = map[string]bool{
	// The embedded server serves gRPC and HTTP on its one client port;
	// only beamer's gRPC clients use it.
	"Running http and grpc server on single port. This is not recommended for production.": true,
}

// slogLevel maps zap's levels to slog's; DPanic, Panic and Fatal are
// errors (zap itself panics or exits after writing them).
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// attrs turns zap fields into slog attributes through zap's own map
// encoder, which knows every field type (errors become their text,
// objects maps), sorted by key so a record reads the same every time.
func attrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	a := attrs(fields)
	if len(a) == 0 {
		return c
	}
	return &slogCore{h: c.h.WithAttrs(a), min: c.min, stopping: c.stopping, repeats: c.repeats}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if benign[e.Message] || c.stopping != nil && c.stopping.Load() || !c.repeats.first(e.Message) {
		level = slog.LevelDebug
		if !c.h.Enabled(context.Background(), level) {
			return nil
		}
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }
