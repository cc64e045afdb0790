package cookie

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// CookieVector is one server-side encoding: the server with slot ID
// writes its TSval for a segment of Flow (client → VIP) under Keys, key id
// KID; Mask, Cookie and Out are what C and Go must both compute.
type CookieVector struct {
	Name   string     `json:"name"`
	Keys   [2]Key     `json:"keys"`
	KID    uint8      `json:"kid"`
	ID     uint16     `json:"id"`
	Client netip.Addr `json:"client"`
	VIP    netip.Addr `json:"vip"`
	CPort  uint16     `json:"cport"`
	VPort  uint16     `json:"vport"`
	TSval  uint32     `json:"tsval"`
	SynAck bool       `json:"synack"`
	Mask   uint32     `json:"mask"`
	Cookie uint16     `json:"cookie"`
	Out    uint32     `json:"out"`
}

// Flow is the vector's connection as the mux sees it.
func (v CookieVector) Flow() wire.Flow {
	return wire.Flow{Src: v.Client, Dst: v.VIP, SrcPort: v.CPort, DstPort: v.VPort, Proto: 6}
}

// RestoreVector is one ingress case: a client's echo and whether it
// reaches a listener, and the TSecr the stack must see.
type RestoreVector struct {
	Name     string `json:"name"`
	Echo     uint32 `json:"echo"`
	Listener bool   `json:"listener"`
	Restored uint32 `json:"restored"`
}

// Vectors is testdata/cheetah-vectors.json.
type Vectors struct {
	Cookies  []CookieVector  `json:"cookies"`
	Restores []RestoreVector `json:"restores"`
}

// VectorsPath is the shared vector file, found from this source file.
func VectorsPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "testdata", "cheetah-vectors.json")
}

// LoadVectors reads the shared vector file.
func LoadVectors() (*Vectors, error) {
	b, err := os.ReadFile(VectorsPath())
	if err != nil {
		return nil, err
	}
	var v Vectors
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
