package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Every command logs through slog's default logger, set up here from the
// root's --log-level and --log-format (also BEAMER_LOG_LEVEL and
// BEAMER_LOG_FORMAT): one place, so every daemon and every library that
// logs through the standard log package writes the same format.
var logLevel, logFormat string

func init() {
	rootCmd.PersistentFlags().StringVar(&logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	rootCmd.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
}

// newLogger builds the logger the flags ask for, writing to w.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// setupLogging makes the flags' logger the default.
func setupLogging() error {
	l, err := newLogger(os.Stderr, logLevel, logFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(l)
	return nil
}
