package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// DIPState is where a DIP is in its life.
type DIPState string

const (
	// Adding: recorded, not yet published in the mux ring.
	Adding DIPState = "adding"
	// Active: in the ring, owning buckets according to its weight.
	Active DIPState = "active"
	// Removing: weight forced to 0; the record goes once its buckets have
	// moved and its server id is retired in the ring.
	Removing DIPState = "removing"
)

// DIP is the record of one DIP in "dips".
type DIP struct {
	ID      forwarding.ServerID `json:"id"`
	Addr    netip.Addr          `json:"addr"`
	Weight  uint32              `json:"weight"`
	State   DIPState            `json:"state"`
	Drained bool                `json:"drained,omitempty"`
	// Down is set by health checks; a down DIP owns no bucket.
	Down bool `json:"down,omitempty"`
	// HealthChanged is when Down or Pending last changed.
	HealthChanged time.Time `json:"health_changed,omitzero"`
	HealthRecord
}

// EffectiveWeight is the weight bucket assignment uses.
func (d *DIP) EffectiveWeight() uint32 {
	if d.State == Removing || d.Drained || d.Down || d.Pending {
		return 0
	}
	return d.Weight
}

// idRecord is the value of an "id" entry: the paper's server id → DIP map.
type idRecord struct {
	Addr  netip.Addr `json:"addr"`
	State string     `json:"state"` // active or retired, as in the ring
	// Since is when the id was retired: a Maglev instance keeps a removed
	// backend retired (muxes keep sending its remembered connections there)
	// for the chaining window after it.
	Since time.Time `json:"since,omitzero"`
}

func dipsKey(k ring.Keys) string { return k.Instance + "/dips" }
func dipKey(k ring.Keys, id forwarding.ServerID) string {
	return fmt.Sprintf("%s/dips/%d", k.Instance, id)
}
func idsKey(k ring.Keys) string { return k.Instance + "/id" }
func idKey(k ring.Keys, id forwarding.ServerID) string {
	return fmt.Sprintf("%s/id/%d", k.Instance, id)
}
func parseID(name string) (forwarding.ServerID, bool) {
	n, err := strconv.ParseUint(name, 10, 16)
	id := forwarding.ServerID(n)
	return id, err == nil && id.Valid()
}

// readDIPs reads every DIP record of an instance, keyed by id.
func readDIPs(ctx context.Context, st store.Store, k ring.Keys) (map[forwarding.ServerID]*DIP, error) {
	names, err := st.Children(ctx, dipsKey(k))
	if err != nil {
		return nil, err
	}
	out := make(map[forwarding.ServerID]*DIP, len(names))
	for _, name := range names {
		id, ok := parseID(name)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected key %s", dipsKey(k), ring.Quote([]byte(name)))
		}
		it, err := st.Get(ctx, dipKey(k, id))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var d DIP
		if err := json.Unmarshal(it.Value, &d); err != nil || d.ID != id {
			return nil, fmt.Errorf("%s: bad record %s: %v", dipKey(k, id), ring.Quote(it.Value), err)
		}
		out[id] = &d
	}
	return out, nil
}

// readIDs reads the "id" records.
func readIDs(ctx context.Context, st store.Store, k ring.Keys) (map[forwarding.ServerID]idRecord, error) {
	names, err := st.Children(ctx, idsKey(k))
	if err != nil {
		return nil, err
	}
	out := make(map[forwarding.ServerID]idRecord, len(names))
	for _, name := range names {
		id, ok := parseID(name)
		if !ok {
			continue
		}
		it, err := st.Get(ctx, idKey(k, id))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var r idRecord
		if err := json.Unmarshal(it.Value, &r); err != nil {
			return nil, fmt.Errorf("%s: bad record: %v", idKey(k, id), err)
		}
		out[id] = r
	}
	return out, nil
}

func putDIP(d *DIP, k ring.Keys) store.Op {
	b, _ := json.Marshal(d) // cannot fail: plain fields
	return store.Put(dipKey(k, d.ID), b)
}

func putID(k ring.Keys, id forwarding.ServerID, r idRecord) store.Op {
	b, _ := json.Marshal(r)
	return store.Put(idKey(k, id), b)
}
