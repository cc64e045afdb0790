package classes

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Vectors are class-selection cases shared by the Go selection (this
// package's tests) and the mux program (pkg/dataplane runs each through
// BPF_PROG_TEST_RUN): for each record, hashes with the class and server
// Algorithm 1 picks. testdata/awfd-vectors.json holds them.
type Vectors struct {
	Cases []VectorCase `json:"cases"`
}

// VectorCase is one record and its expected picks.
type VectorCase struct {
	Name   string  `json:"name"`
	Record *Record `json:"record"`
	Picks  []Pick  `json:"picks"`
}

// Pick is one hash and what it selects (Class -1, Server 0: no class).
type Pick struct {
	Hash   uint32              `json:"hash"`
	Class  int                 `json:"class"`
	Server forwarding.ServerID `json:"server"`
}

// LoadVectors reads and validates a vectors file.
func LoadVectors(path string) (*Vectors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v Vectors
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range v.Cases {
		if c.Record == nil {
			return nil, fmt.Errorf("%s: case %q has no record", path, c.Name)
		}
		if err := c.Record.Validate(); err != nil {
			return nil, fmt.Errorf("%s: case %q: %w", path, c.Name, err)
		}
	}
	return &v, nil
}
