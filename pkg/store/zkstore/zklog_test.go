package zkstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestZKLogger: the ZooKeeper client's lines reach the logger, the first
// as a warning and the next within warnEvery as debug records (the client
// retries every server in a loop during an outage); after Close every line
// is a debug record; a nil logger discards.
func TestZKLogger(t *testing.T) {
	var buf bytes.Buffer
	closed := make(chan struct{})
	l := newZKLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), closed)
	l.Printf("failed to connect to %s: %v", "127.0.0.1:2181", "connection refused")
	l.Printf("failed to connect to %s: %v", "127.0.0.1:2182", "connection refused")
	close(closed)
	l.Printf("recv loop terminated: %v", "use of closed network connection")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="zookeeper client" detail="failed to connect to 127.0.0.1:2181: connection refused"`,
		`level=DEBUG msg="zookeeper client" detail="failed to connect to 127.0.0.1:2182: connection refused"`,
		`level=DEBUG msg="zookeeper client" detail="recv loop terminated: use of closed network connection"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("records:\n%s", buf.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("record %d: %s\nwant …%s", i, lines[i], w)
		}
	}
	newZKLogger(nil, closed).Printf("nothing") // must not panic
}
