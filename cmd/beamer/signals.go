package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// ignoreHangup keeps SIGHUP (a closed terminal, a reload sent by habit)
// from killing a daemon: Go's default for it is to exit, which for a mux
// would be a needless withdrawal. The signal is logged and otherwise
// ignored; the daemons have nothing to reload.
func ignoreHangup(log *slog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		for range ch {
			log.Info("SIGHUP ignored: nothing to reload; restart the daemon to change its configuration")
		}
	}()
}

// upgradeContext is ctx, also ended by SIGUSR2: the signal to exit for an
// upgrade, leaving the data-plane program pinned and forwarding (and the
// node set up) for the next daemon to take over. upgrading reports whether
// that is why ctx ended.
func upgradeContext(ctx context.Context) (_ context.Context, upgrading func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR2)
	var got atomic.Bool
	go func() {
		select {
		case <-ch:
			got.Store(true)
			cancel()
		case <-ctx.Done():
		}
		signal.Stop(ch)
	}()
	return ctx, got.Load
}
