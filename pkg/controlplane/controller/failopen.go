package controller

import (
	"fmt"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// failOpen describes an instance whose servers are all down. Health checks
// can be wrong as a whole (a probe misconfigured for the service, the
// controller cut off from the servers, an agent upgrade): rather than
// dropping every packet of the VIP, the instance then keeps the owners it
// had, and says so loudly (log at error level every health round, `ctl
// show`, metric beamer_controller_fail_open).
type failOpen struct {
	active  bool
	down    int
	reasons string // a few servers' last errors, for the log
}

// failingOpen reports whether every server that would serve the instance
// but for its health (not removing, drained or pending, weight > 0) is
// down, and there is at least one.
func failingOpen(dips map[forwarding.ServerID]*DIP) failOpen {
	var fo failOpen
	var reasons []string
	for _, id := range sortedKeys(dips) {
		d := dips[id]
		if d.State == Removing || d.Drained || d.Pending || d.Weight == 0 {
			continue
		}
		if !d.Down {
			return failOpen{}
		}
		fo.down++
		if len(reasons) < 3 {
			reasons = append(reasons, fmt.Sprintf("%d: %s", id, d.LastError))
		}
	}
	fo.active = fo.down > 0
	if fo.down > len(reasons) {
		reasons = append(reasons, "…")
	}
	fo.reasons = strings.Join(reasons, "; ")
	return fo
}

// assignmentWeight is the weight a DIP gets in bucket assignment. When the
// instance fails open, down servers that still own buckets keep their
// weight (so buckets stay where they are); if none owns any, every down
// server gets its weight, so a removal during fail-open still hands its
// buckets to someone.
func assignmentWeight(d *DIP, fo failOpen, owned map[forwarding.ServerID]int, anyOwner bool) uint32 {
	if fo.active && d.Down && d.State != Removing && !d.Drained && !d.Pending && (owned[d.ID] > 0 || !anyOwner) {
		return d.Weight
	}
	return d.EffectiveWeight()
}

// ownedBuckets counts the buckets each DIP owns in t, and whether any DIP
// owns one.
func ownedBuckets(t *forwarding.Table, dips map[forwarding.ServerID]*DIP) (map[forwarding.ServerID]int, bool) {
	owned := map[forwarding.ServerID]int{}
	for _, b := range t.Buckets {
		owned[b.Current]++
	}
	any := false
	for id := range dips {
		if owned[id] > 0 {
			any = true
		}
	}
	return owned, any
}
