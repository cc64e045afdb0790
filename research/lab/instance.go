package lab

import (
	"encoding/json"
	"fmt"
	"time"
)

// InstanceState is what `beamer ctl show --json` says of the lab's
// instance: whether health checks took servers out, whether buckets are
// left without an owner.
type InstanceState struct {
	Generation uint32     `json:"generation"`
	Unowned    int        `json:"unowned_buckets"`
	DIPs       []DIPState `json:"dips"`
	Retired    []int      `json:"retired"`
	FailOpen   bool       `json:"fail_open,omitempty"` // every server down: the last owners kept
	Warnings   []string   `json:"warnings,omitempty"`
	// HistoryEvictions: the servers the K limit pushed out of bucket
	// histories while they held connections there.
	HistoryEvictions *EvictionsState `json:"history_evictions,omitempty"`
}

// EvictionsState is the controller's K-limit record as ctl show prints it.
type EvictionsState struct {
	K      int `json:"max_chain"`
	Recent []struct {
		Server  int `json:"server"`
		Buckets []struct {
			Bucket      uint32 `json:"bucket"`
			Connections uint32 `json:"connections"`
		} `json:"buckets"`
		Connections uint64 `json:"connections"`
		Avoiding    bool   `json:"avoiding"`
	} `json:"recent"`
}

// DIPState is one DIP as the controller reports it.
type DIPState struct {
	ID      int    `json:"id"`
	State   string `json:"state"`
	Down    bool   `json:"down,omitempty"`
	Pending bool   `json:"pending,omitempty"` // added, not yet probed up
	Reason  string `json:"health_reason,omitempty"`
	Buckets int    `json:"buckets"`
	Chained int    `json:"chained"`
}

// Pending lists the server ids not yet probed up.
func (s *InstanceState) Pending() []int {
	var out []int
	for _, d := range s.DIPs {
		if d.Pending {
			out = append(out, d.ID)
		}
	}
	return out
}

// Down lists the server ids marked down.
func (s *InstanceState) Down() []int {
	var out []int
	for _, d := range s.DIPs {
		if d.Down {
			out = append(out, d.ID)
		}
	}
	return out
}

// Instance reads the instance's state from the store.
func (l *Lab) Instance() (*InstanceState, error) {
	out, err := l.Ctl("show", Instance, "-o", "json")
	if err != nil {
		return nil, err
	}
	var s InstanceState
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return nil, fmt.Errorf("ctl show --json: %w", err)
	}
	return &s, nil
}

// waitDown waits until health checks mark server i down (or up, with
// down false), at most within.
func (l *Lab) waitDown(i int, down bool, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		s, err := l.Instance()
		if err == nil {
			for _, d := range s.DIPs {
				if d.ID == ServerID(i) && d.Down == down {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %d not marked down=%v by health checks within %v (last: %+v, %v)", i, down, within, s, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
