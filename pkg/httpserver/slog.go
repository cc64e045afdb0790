package httpserver

import "log/slog"

const (
	levelInfo = slog.LevelInfo
	levelWarn = slog.LevelWarn
)

// slogDefault is read at each line, so a daemon's --log-format set after
// the server started still applies.
func slogDefault() *slog.Logger { return slog.Default() }
