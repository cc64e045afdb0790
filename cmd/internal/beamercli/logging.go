package beamercli

import (
	"io"
	"log/slog"

	"github.com/beamer-lb/beamer/cmd/internal/rootflags"
	"github.com/spf13/cobra"
)

// Every command logs through slog's default logger, set up from the
// root's --log-level and --log-format (also BEAMER_LOG_LEVEL and
// BEAMER_LOG_FORMAT) by rootflags, which beamer-lab shares.

// addLogFlags gives the root its log flags; Install makes them the default
// logger before a command runs.
func addLogFlags(root *cobra.Command) *rootflags.Log {
	var l rootflags.Log
	l.Register(root.PersistentFlags())
	return &l
}

// newLogger builds the logger the flags ask for, writing to w.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	return rootflags.NewLogger(w, level, format)
}
