package zkstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
)

// The ZooKeeper client logs printf lines without a level; with its
// information lines off (zk.WithLogInfo(false)) what is left are errors:
// a server it cannot connect to, authentication refused, a connection
// lost. They go to the process's logger as warnings, at most one per
// warnEvery (the client retries every server of the ensemble in a loop
// during an outage); the others, and everything after Close (a closed
// connection reports its loops ending), as debug records.

// warnEvery bounds the ZooKeeper client's warnings.
const warnEvery = 10 * time.Second

// zkLogger is the ZooKeeper client's logger (zk.Logger).
type zkLogger struct {
	l      *slog.Logger
	closed <-chan struct{}
	warn   rate.Sometimes
}

func newZKLogger(l *slog.Logger, closed <-chan struct{}) *zkLogger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &zkLogger{l: l, closed: closed, warn: rate.Sometimes{Interval: warnEvery}}
}

// Printf implements zk.Logger.
func (z *zkLogger) Printf(format string, a ...any) {
	level := slog.LevelDebug
	select {
	case <-z.closed:
	default:
		z.warn.Do(func() { level = slog.LevelWarn })
	}
	ctx := context.Background()
	if !z.l.Enabled(ctx, level) {
		return
	}
	z.l.Log(ctx, level, "zookeeper client", "detail", fmt.Sprintf(format, a...))
}
