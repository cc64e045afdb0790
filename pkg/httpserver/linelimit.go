package httpserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// maxLineKinds bounds the kinds of line a LineLimiter tracks: callers name
// kinds from a fixed set, never from request data, but a bound keeps a
// mistake from growing a map.
const maxLineKinds = 256

// LineLimiter lets a kind of log line through at most once per interval
// and counts the lines it held back, which the next line of that kind
// reports (suppressed=N).
type LineLimiter struct {
	every time.Duration
	mu    sync.Mutex
	kinds map[string]*lineKind
}

type lineKind struct {
	last       time.Time
	suppressed uint64
}

// NewLineLimiter lets each kind of line through once per every.
func NewLineLimiter(every time.Duration) *LineLimiter {
	return &LineLimiter{every: every, kinds: map[string]*lineKind{}}
}

// Allow reports whether a line of kind may be printed now and, if so, how
// many lines of that kind were held back since the last one printed.
func (l *LineLimiter) Allow(kind string) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[kind]
	if k == nil {
		if len(l.kinds) >= maxLineKinds {
			kind = "other"
			if k = l.kinds[kind]; k == nil {
				k = &lineKind{}
				l.kinds[kind] = k
			}
		} else {
			k = &lineKind{}
			l.kinds[kind] = k
		}
	}
	now := time.Now()
	if !k.last.IsZero() && now.Sub(k.last) < l.every {
		k.suppressed++
		return false, 0
	}
	k.last, suppressed, k.suppressed = now, k.suppressed, 0
	return true, suppressed
}

// Log prints msg at level through logger when kind is allowed, with the
// count of held-back lines.
func (l *LineLimiter) Log(logger *slog.Logger, level slog.Level, kind, msg string, args ...any) {
	ok, n := l.Allow(kind)
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	logger.Log(context.Background(), level, msg, args...)
}

// errorLogWriter is an http.Server's ErrorLog output: one line per
// interval per server, through slog at warning level.
type errorLogWriter struct {
	name string
	lim  *LineLimiter
}

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.lim.Log(slog.Default(), slog.LevelWarn, "server-error", "HTTP server error", "server", w.name, "detail", strings.TrimSpace(string(p)))
	return len(p), nil
}
