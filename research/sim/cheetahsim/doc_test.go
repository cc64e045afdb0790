package cheetahsim

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/beamer-lb/beamer/research/sim/docblock"
)

var update = flag.Bool("update", false, "rewrite the document's generated blocks from docs/img/cheetah-sim.json")

// The figures of docs/strategy-cheetah.md are what the committed raw run
// (docs/img/cheetah-sim.json, written by scripts/sim-doc.sh) says.
func TestDocFigures(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/img/cheetah-sim.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.PCC) == 0 || len(r.Imbalance) == 0 {
		t.Fatal("docs/img/cheetah-sim.json has no rows")
	}
	if err := docblock.Sync("../../../docs/strategy-cheetah.md", r.DocBlocks(), *update); err != nil {
		t.Fatal(err)
	}
}
