package partition

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
)

// The mux logs every table it applies (pkg/node/muxd): "table installed"
// for a whole table (start, new incarnation, resync), "generation
// applied" for a delta, both with the table's digest when it runs with
// --log-level debug. The rig runs muxes with --log-format json and reads
// these lines back: the product's own account, no test hook.
type muxLine struct {
	Time        time.Time `json:"time"`
	Msg         string    `json:"msg"`
	Instance    string    `json:"instance"`
	Incarnation uint32    `json:"incarnation"`
	Generation  uint32    `json:"generation"`
	Digest      string    `json:"digest"`
}

// readApplies returns the tables mux (one run of it, logged at path)
// applied, in log order.
func readApplies(mux, run, path string) ([]history.Apply, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []history.Apply
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			continue // not a log line (a panic, a child's output)
		}
		var m muxLine
		if err := json.Unmarshal(b, &m); err != nil {
			continue
		}
		if m.Msg != "table installed" && m.Msg != "generation applied" {
			continue
		}
		if m.Digest == "" {
			return nil, fmt.Errorf("%s: %q without a digest: is the mux at --log-level debug?", path, m.Msg)
		}
		out = append(out, history.Apply{Mux: mux, Run: run, At: m.Time, Instance: m.Instance,
			Incarnation: m.Incarnation, Generation: m.Generation, Digest: m.Digest})
	}
	return out, sc.Err()
}
