package partition

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
)

// TestFigures: failover is fault → the first pair newer than all before
// it; lag is first → last mux applying a pair; a fault followed by no
// publication has no failover time.
func TestFigures(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ap := func(mux string, s float64, inc, gen uint32) history.Apply {
		return history.Apply{Mux: mux, At: at(s), Instance: "web", Incarnation: inc, Generation: gen, Digest: "d"}
	}
	applies := []history.Apply{ap("mux0", 1, 100, 5), ap("mux1", 1.002, 100, 5),
		ap("mux0", 13, 120, 1), ap("mux1", 13.05, 120, 1), // after the first fault (at 2 s)
	}
	faults := []*Fault{{Kind: LeaderKilled, Injected: at(2)}, {Kind: QuorumLost, Injected: at(20)}}
	requests := []history.Request{{ID: 1, Outcome: history.OK, Start: at(12.5), End: at(12.9)}}
	figs := figures(faults, applies, requests)
	if figs[0].Failover != 11*time.Second || len(figs[0].Lags) != 1 || figs[0].Lags[0] != 50*time.Millisecond {
		t.Errorf("leader-killed: %+v, want failover 11s, lag 50ms", figs[0])
	}
	if figs[0].Ack != 10900*time.Millisecond {
		t.Errorf("leader-killed: ack %v, want 10.9s", figs[0].Ack)
	}
	if figs[1].Failover != -1 || figs[1].Ack != -1 {
		t.Errorf("quorum-lost: %+v, want no failover", figs[1])
	}
	s := Summarize(figs)
	if !strings.Contains(s, "leader-killed") || !strings.Contains(s, "11s") || !strings.Contains(s, "no publication") {
		t.Errorf("summary:\n%s", s)
	}
}

// TestReadApplies: the mux's JSON log lines become applies; a line
// without a digest (a mux not at debug level) is an error, not a gap.
func TestReadApplies(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mux0.log")
	log := `{"time":"2026-11-27T09:00:00.5Z","level":"DEBUG","msg":"table installed","instance":"web","incarnation":100,"generation":4,"digest":"aa"}
not json
{"time":"2026-11-27T09:00:01Z","level":"INFO","msg":"generation applied","instance":"web","incarnation":100,"generation":5,"apply":"12µs","digest":"bb"}
{"time":"2026-11-27T09:00:02Z","level":"INFO","msg":"instance caught up with the store","instance":"web"}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	as, err := readApplies("mux0", "1", path)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[0].Generation != 4 || as[0].Digest != "aa" || as[1].Generation != 5 || as[1].Digest != "bb" || as[1].Mux != "mux0" {
		t.Fatalf("applies %+v", as)
	}
	os.WriteFile(path, []byte(`{"time":"2026-11-27T09:00:01Z","msg":"generation applied","instance":"web","incarnation":1,"generation":2}`+"\n"), 0o600)
	if _, err := readApplies("mux0", "1", path); err == nil || !strings.Contains(err.Error(), "debug") {
		t.Errorf("a line without a digest: %v", err)
	}
}
