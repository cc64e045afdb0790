package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestLogging: --log-format json writes one JSON object per line with the
// level; --log-level filters; the controller's "ERROR: " lines are errors,
// its "WARN: " lines warnings;
// bad values are refused with what is accepted.
func TestLogging(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var buf bytes.Buffer
	l, err := newLogger(&buf, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("not shown")
	slogf(l)("instance %s: server %d (%v): %s", "web", 1025, "198.18.0.10", "down: connection refused")
	slogf(l)("ERROR: instance %s: all %d servers are down", "web", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("warn level: %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "ERROR" || rec["msg"] != "instance web: all 2 servers are down" {
		t.Errorf("record: %v", rec)
	}
	buf.Reset()
	slogf(l)("WARN: instance %s: server %d pushed out", "web", 1025)
	if !strings.Contains(buf.String(), `"level":"WARN","msg":"instance web: server 1025 pushed out"`) {
		t.Errorf("WARN: prefix: %q", buf.String())
	}
	buf.Reset()
	l, _ = newLogger(&buf, "debug", "text")
	l.Debug("applied", "generation", 3)
	if !strings.Contains(buf.String(), "level=DEBUG msg=applied generation=3") {
		t.Errorf("text: %q", buf.String())
	}
	if _, err := newLogger(&buf, "loud", "text"); err == nil || err.Error() != `--log-level "loud": want debug, info, warn or error` {
		t.Errorf("bad level: %v", err)
	}
	if _, err := newLogger(&buf, "info", "xml"); err == nil || err.Error() != `--log-format "xml": want text or json` {
		t.Errorf("bad format: %v", err)
	}
	// Through the command line: the root flags and their variables.
	t.Setenv("BEAMER_LOG_FORMAT", "yaml")
	if err := run("version"); err == nil || err.Error() != `--log-format "yaml": want text or json` {
		t.Errorf("BEAMER_LOG_FORMAT=yaml: %v", err)
	}
	if err := run("--log-format", "json", "--log-level", "error", "version"); err != nil {
		t.Fatal(err)
	}
	if !slog.Default().Handler().Enabled(nil, slog.LevelError) || slog.Default().Handler().Enabled(nil, slog.LevelWarn) {
		t.Error("--log-level error not in force")
	}
	if err := run("version"); err == nil {
		t.Error("after the flag run, the variable applies again")
	}
}
