package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

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

// slogf adapts a printf-style Logf hook (the controller's) to slog: a
// message starting "ERROR: " is logged at error level without the prefix,
// one starting "WARN: " at warning level.
func slogf(l *slog.Logger) func(format string, a ...any) {
	return func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		if rest, ok := strings.CutPrefix(msg, "ERROR: "); ok {
			l.Error(rest)
			return
		}
		if rest, ok := strings.CutPrefix(msg, "WARN: "); ok {
			l.Warn(rest)
			return
		}
		l.Info(msg)
	}
}
