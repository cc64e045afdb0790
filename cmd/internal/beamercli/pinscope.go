package beamercli

import (
	"log/slog"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// warnIfPinsDie warns at start when the daemon's pinned program would not
// outlive it (started with `ip netns exec`: a private mount namespace and
// bpffs), so a crash would stop forwarding instead of leaving the program
// running as docs/control-plane.md ("Mux and agent lifecycle") promises.
// pinDir "-" (no pinning) asks for nothing to outlive the process.
func warnIfPinsDie(log *slog.Logger, daemon, pinDir string) {
	if pinDir == "-" {
		return
	}
	if die, why := dataplane.PinsDieWithProcess(); die {
		log.Warn(daemon+": its pinned program will die with this process, so a crash stops forwarding; "+
			"start it in the network namespace without a mount namespace of its own: nsenter --net=/var/run/netns/NAME beamer "+daemon+" … (not ip netns exec)",
			"reason", why)
	}
}
