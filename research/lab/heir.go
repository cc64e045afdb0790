package lab

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// remove-heir (issue 28, the K limit): a rolling removal aimed at one
// server's connections. Server I's busy connections stay on I (daisy
// chained) while their buckets move; each remove-heir takes out of the pool
// the server that now owns the buckets of most of them, among those whose
// buckets moved most often, so that some bucket moves once per removal and
// its history reaches max_chain while I still holds connections there.

// HeirReport is what remove-heir saw and what the controller reported.
type HeirReport struct {
	// Server is the index of the server whose connections are followed;
	// Buckets its busy connections per bucket when the first remove-heir
	// ran (from the clients' own ledger: client ends hashed as the mux
	// does).
	Server  int            `json:"server"`
	Buckets map[uint32]int `json:"buckets"`
	// Removed are the servers remove-heir took out, in order, and Moves
	// the longest history (moves) among the followed connections' buckets
	// before each removal.
	Removed []int `json:"removed"`
	Moves   []int `json:"moves"`
	// Evicted and Cuts are the controller's K-limit counters at the end:
	// connections pushed out of histories per server id, and history
	// entries cut by what they held.
	Evicted map[string]uint64 `json:"evicted_connections"`
	Cuts    map[string]uint64 `json:"history_cuts"`
}

// lookupAnswer is the part of `ctl lookup -o json` remove-heir reads.
type lookupAnswer struct {
	Bucket  uint32 `json:"bucket"`
	Current struct {
		ID int `json:"id"`
	} `json:"current"`
	History []struct {
		ID int `json:"id"`
	} `json:"history"`
}

// removeHeir performs `remove-heir i`.
func (r *runner) removeHeir(i int) error {
	l := r.lab
	flows := r.load.busyFlows(fmt.Sprintf("srv%d", i))
	if len(flows) == 0 {
		return fmt.Errorf("remove-heir %d: server %d serves no busy connection", i, i)
	}
	if r.heirs == nil {
		r.heirs = &HeirReport{Server: i, Buckets: map[uint32]int{}}
		for _, f := range flows {
			fl := wire.Flow{Src: f.Addr(), Dst: l.vip(), SrcPort: f.Port(), DstPort: 80, Proto: 6}
			r.heirs.Buckets[fl.Bucket(r.p.Buckets)]++
		}
	} else if r.heirs.Server != i {
		return fmt.Errorf("remove-heir %d: this run follows server %d", i, r.heirs.Server)
	}
	longest := -1
	owners := map[int]int{} // owner id → followed connections, among the longest histories
	for _, f := range flows {
		out, err := l.Ctl("lookup", Instance, f.String(), "-o", "json")
		if err != nil {
			return fmt.Errorf("remove-heir: ctl lookup %v: %w", f, err)
		}
		var a lookupAnswer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return fmt.Errorf("remove-heir: ctl lookup %v: %w", f, err)
		}
		switch n := len(a.History); {
		case n > longest:
			longest, owners = n, map[int]int{a.Current.ID: 1}
		case n == longest:
			owners[a.Current.ID]++
		}
	}
	best := 0
	for id, n := range owners {
		if n > owners[best] || n == owners[best] && id < best {
			best = id
		}
	}
	idx := best - ServerID(0)
	if best == 0 || idx < 0 {
		return fmt.Errorf("remove-heir %d: the followed buckets have no owner", i)
	}
	r.say("remove-heir %d: server %d owns %d of its connections whose buckets moved %d times: removing it", i, idx, owners[best], longest)
	if err := l.RemoveServer(idx); err != nil {
		return err
	}
	r.heirs.Removed = append(r.heirs.Removed, idx)
	r.heirs.Moves = append(r.heirs.Moves, longest)
	return nil
}

// controllerCounters reads the controller's K-limit counters (its metrics
// are served when the scenario sets `holds`).
func (r *runner) controllerCounters() {
	if r.heirs == nil || r.sc.HoldInterval == 0 {
		return
	}
	var err error
	if r.heirs.Evicted, err = scrapeLabel(r.lab.ctl, "beamer_controller_history_evicted_connections_total", "server"); err != nil {
		r.say("controller metrics: %v", err)
	}
	if r.heirs.Cuts, err = scrapeLabel(r.lab.ctl, "beamer_controller_history_cuts_total", "held"); err != nil {
		r.say("controller metrics: %v", err)
	}
}

// EvictedBuckets are the buckets the controller's record (ctl show) says
// it pushed server id out of.
func (s *InstanceState) EvictedBuckets(id int) []uint32 {
	var out []uint32
	if s == nil || s.HistoryEvictions == nil {
		return nil
	}
	for _, ev := range s.HistoryEvictions.Recent {
		if ev.Server != id {
			continue
		}
		for _, b := range ev.Buckets {
			if !slices.Contains(out, b.Bucket) {
				out = append(out, b.Bucket)
			}
		}
	}
	slices.Sort(out)
	return out
}
