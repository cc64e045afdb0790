package wiretest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// GUEVectors is pkg/wire/testdata/gue-vectors.json: the GUE encapsulation
// (docs/wire-format.md "GUE") as the mux writes it and the agent reads it,
// checked against the BPF programs (pkg/dataplane TestGUE*Vectors) and the
// Go model (pkg/model TestGUEVectorsMatchModel) like testdata/vectors.json.
type GUEVectors struct {
	Comment string        `json:"comment"`
	Mux     MuxScenario   `json:"mux"`
	Maglev  MuxScenario   `json:"maglev"` // another strategy in GUE; cases in order (they fill the connection table)
	Agent   AgentScenario `json:"agent"`
}

// GUEVectorsPath is the path of pkg/wire/testdata/gue-vectors.json.
func GUEVectorsPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "gue-vectors.json")
}

// LoadGUEVectors reads pkg/wire/testdata/gue-vectors.json.
func LoadGUEVectors() (*GUEVectors, error) {
	b, err := os.ReadFile(GUEVectorsPath())
	if err != nil {
		return nil, err
	}
	var v GUEVectors
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", GUEVectorsPath(), err)
	}
	return &v, nil
}
