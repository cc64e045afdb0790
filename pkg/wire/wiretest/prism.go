package wiretest

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// PrismVector is one entry of testdata/prism-signatures.json: a flow and
// its Prism signature, checked against the Go signature (pkg/wire) and the
// BPF program's (pkg/dataplane), so that neither can change alone — an MCT
// written from one must match the other.
type PrismVector struct {
	Src     netip.Addr `json:"src"`
	Dst     netip.Addr `json:"dst"`
	SrcPort uint16     `json:"sport"`
	DstPort uint16     `json:"dport"`
	Sig     string     `json:"signature"`
	Bucket  uint32     `json:"bucket_of_1009"`
}

// LoadPrismVectors reads testdata/prism-signatures.json.
func LoadPrismVectors() ([]PrismVector, error) {
	path := filepath.Join(filepath.Dir(VectorsPath()), "prism-signatures.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v []PrismVector
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Flow is the vector's flow.
func (v PrismVector) Flow() wire.Flow {
	return wire.Flow{Src: v.Src, Dst: v.Dst, SrcPort: v.SrcPort, DstPort: v.DstPort, Proto: wire.ProtoTCP}
}

// Signature is the vector's expected signature.
func (v PrismVector) Signature() (uint64, error) { return strconv.ParseUint(v.Sig, 0, 64) }
