package beamercli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestLogging: --log-format json writes one JSON object per line with the
// level and the fields; --log-level filters; bad values are refused with
// what is accepted.
func TestLogging(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var buf bytes.Buffer
	l, err := newLogger(&buf, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("not shown")
	l.Error("all servers are down", "instance", "web", "servers_down", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("warn level: %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "ERROR" || rec["msg"] != "all servers are down" || rec["instance"] != "web" || rec["servers_down"] != 2.0 {
		t.Errorf("record: %v", rec)
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
