package wiretest

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Vectors is testdata/vectors.json: the golden cases that both the BPF
// programs (run by BPF_PROG_TEST_RUN) and the Go model must reproduce.
type Vectors struct {
	Comment  string        `json:"comment"`
	FlowHash []HashVector  `json:"flow_hash"`
	Mux      MuxScenario   `json:"mux"`
	Maglev   MuxScenario   `json:"maglev"` // cases run in order: they fill the connection table
	Agent    AgentScenario `json:"agent"`
}

// HashVector is one flow-hash and bucket case.
type HashVector struct {
	Src     netip.Addr `json:"src"`
	Dst     netip.Addr `json:"dst"`
	SrcPort uint16     `json:"sport"`
	DstPort uint16     `json:"dport"`
	Proto   uint8      `json:"proto"`
	Hash    uint32     `json:"hash"`
	Buckets uint32     `json:"buckets"`
	Bucket  uint32     `json:"bucket"`
}

// ServerVector is one server-id table entry.
type ServerVector struct {
	ID    forwarding.ServerID `json:"id"`
	Addr  netip.Addr          `json:"addr"`
	State string              `json:"state"` // "active" or "retired"
}

// BucketVector is one bucket.
type BucketVector struct {
	Index   uint32                `json:"index"`
	Current forwarding.ServerID   `json:"current"`
	History []forwarding.ServerID `json:"history,omitempty"` // previous owners, most recent first
	Changed uint32                `json:"changed"`
}

// NextHopVector says how the route lookup towards an address ends.
type NextHopVector struct {
	Addr   netip.Addr `json:"addr"`
	Result string     `json:"result"` // tx, redirect, no_neigh, no_route
	DstMAC string     `json:"dmac,omitempty"`
	SrcMAC string     `json:"smac,omitempty"`
}

// PacketCase is one input frame and what must come of it.
type PacketCase struct {
	Name    string `json:"name"`
	Input   string `json:"input"` // hex
	Action  string `json:"action"`
	Counter string `json:"counter"`
	Output  string `json:"output,omitempty"` // hex, for tx/redirect/pass
}

// MuxScenario is a mux with one instance and the cases run against it.
type MuxScenario struct {
	MuxAddr     netip.Addr          `json:"mux_addr"`
	Instance    forwarding.Instance `json:"instance"`
	Generation  uint32              `json:"generation"`
	Incarnation uint32              `json:"incarnation"`
	Servers     []ServerVector      `json:"servers"`
	Buckets     []BucketVector      `json:"buckets"`
	NextHops    []NextHopVector     `json:"nexthops"`
	Cases       []PacketCase        `json:"cases"`
}

// AgentVIPVector is one VIP the agent serves.
type AgentVIPVector struct {
	VIP     netip.Addr `json:"vip"`
	Buckets uint32     `json:"buckets"`
	Window  uint32     `json:"window_s"`
}

// SocketVector is a socket the server has: a listener on Local, or a
// connection between Remote (the client) and Local (VIP:port).
type SocketVector struct {
	Kind   string         `json:"kind"` // "listen" or "connection" (TCP), "udp" (bound) or "udp-connected"
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote,omitempty"`
}

// AgentScenario is a server agent and the cases run against it in order:
// cases change the agent's state (generations and change times seen).
type AgentScenario struct {
	Addr netip.Addr `json:"addr"`
	Now  uint32     `json:"now"` // Unix seconds of the agent's clock
	// Sanity bounds: seconds the controller's clock may lead the agent's,
	// generations a packet may lead the remembered one.
	MaxSkew    uint32           `json:"max_skew_s"`
	MaxGenJump uint32           `json:"max_gen_jump"`
	VIPs       []AgentVIPVector `json:"vips"`
	Trusted    []netip.Prefix   `json:"trusted"`
	Sockets    []SocketVector   `json:"sockets"`
	NextHops   []NextHopVector  `json:"nexthops"`
	// GUEPorts: UDP ports it takes GUE on besides the default (6080).
	GUEPorts []uint16     `json:"gue_ports,omitempty"`
	Cases    []PacketCase `json:"cases"`
}

// Table builds the forwarding table the scenario describes.
func (s *MuxScenario) Table() (*forwarding.Table, error) {
	t := forwarding.NewTable(int(s.Instance.Buckets))
	t.Generation, t.Incarnation = s.Generation, s.Incarnation
	for _, sv := range s.Servers {
		st := forwarding.Active
		if sv.State == "retired" {
			st = forwarding.Retired
		}
		t.Servers[sv.ID] = forwarding.Server{Addr: sv.Addr, State: st}
	}
	for _, b := range s.Buckets {
		if int(b.Index) >= len(t.Buckets) {
			return nil, fmt.Errorf("bucket %d outside %d", b.Index, len(t.Buckets))
		}
		if len(b.History) > forwarding.MaxChain {
			return nil, fmt.Errorf("bucket %d: history of %d", b.Index, len(b.History))
		}
		bk := forwarding.Bucket{Current: b.Current, Changed: b.Changed}
		copy(bk.History[:], b.History)
		t.Buckets[b.Index] = bk
	}
	return t, t.Validate()
}

// VectorsPath is the path of testdata/vectors.json in this repository.
func VectorsPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "vectors.json")
}

// LoadVectors reads testdata/vectors.json.
func LoadVectors() (*Vectors, error) {
	b, err := os.ReadFile(VectorsPath())
	if err != nil {
		return nil, err
	}
	var v Vectors
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", VectorsPath(), err)
	}
	return &v, nil
}
