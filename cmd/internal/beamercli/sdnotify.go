package beamercli

import (
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// notifySystemd tells systemd the daemon's state (the units are
// Type=notify): READY=1 once it serves, STOPPING=1 when it begins to stop.
// Without NOTIFY_SOCKET (not started by systemd) it does nothing. A failure
// to notify is logged, not fatal: the daemon itself works, and systemd's
// start timeout reports the unit.
func notifySystemd(log *slog.Logger, state string) {
	if sent, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("systemd notification failed", "state", state, "error", err)
	} else if sent {
		log.Debug("systemd notified", "state", state)
	}
}
