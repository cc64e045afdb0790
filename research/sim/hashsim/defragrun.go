package hashsim

import (
	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// DefragPoint is one iteration of the defragmentation run (Beamer
// Figure 25): fragmentation after it and the buckets it moved.
type DefragPoint struct {
	Iteration        int     `json:"iteration"`
	RulesPerDIP      float64 `json:"rules_per_dip"`
	MovedBuckets     int     `json:"moved_buckets"`
	CumulativeMoved  int     `json:"cumulative_moved"`
	MisplacedBuckets int     `json:"misplaced_buckets"`
}

// worstCase is the paper's starting point: every bucket of every DIP is its
// own range (bucket i belongs to DIP i mod n), about buckets/n rules per DIP.
func worstCase(dips int, buckets uint32) []forwarding.Bucket {
	t := make([]forwarding.Bucket, buckets)
	for i := range t {
		t[i].Current = forwarding.MinServerID + forwarding.ServerID(i%dips)
	}
	return t
}

// DefragRun plans the defragmentation of the worst case and steps it until
// done. Iteration 0 is the starting state.
func DefragRun(c Config) ([]DefragPoint, error) {
	t := worstCase(c.FragDIPs, c.FragBuckets)
	plan, err := assign.PlanDefrag(t, c.Defrag)
	if err != nil {
		return nil, err
	}
	points := []DefragPoint{{0, assign.Fragmentation(t), 0, 0, plan.Misplaced(t)}}
	for it := 1; !plan.Done(t); it++ {
		ch, err := plan.Step(t, uint32(it))
		if err != nil {
			return nil, err
		}
		applyChanges(t, ch)
		prev := points[len(points)-1]
		points = append(points, DefragPoint{it, assign.Fragmentation(t), len(ch), prev.CumulativeMoved + len(ch), plan.Misplaced(t)})
	}
	return points, nil
}
