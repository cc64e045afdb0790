package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// logBook keeps what a logger writes as text lines (key=value, no time),
// so tests look for a message and its fields in one line.
type logBook struct {
	mu    sync.Mutex
	lines []string
}

// newLogBook returns a book and a logger writing to it at every level.
func newLogBook() (*logBook, *slog.Logger) {
	b := &logBook{}
	h := slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})
	return b, slog.New(h)
}

// Write takes one record: a text handler writes each in one call.
func (b *logBook) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// all returns a copy of the lines so far.
func (b *logBook) all() []string {
	if b == nil {
		return nil // a harness built without a controller
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// String is every line, one a line.
func (b *logBook) String() string { return strings.Join(b.all(), "\n") }

// find returns the lines containing every one of words.
func (b *logBook) find(words ...string) []string {
	var out []string
	for _, l := range b.all() {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}
