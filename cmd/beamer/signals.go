package main

import (
	"log/slog"
	"os"
	"os/signal"
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
