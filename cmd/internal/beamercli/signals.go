package beamercli

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

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
