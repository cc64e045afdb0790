package hashsim

import (
	"math/rand/v2"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// FragRow is one row of the Beamer appendix fragmentation table: a fresh
// cluster after one control-plane operation.
type FragRow struct {
	Operation    string   `json:"operation"`
	DIPs         int      `json:"dips"` // after the operation
	Buckets      uint32   `json:"buckets"`
	RulesPerDIP  float64  `json:"rules_per_dip"`
	MovedBuckets int      `json:"moved_buckets"`
	PaperRules   *float64 `json:"paper_rules_per_dip,omitempty"`
}

// Fragmentation starts from a fresh, perfectly contiguous cluster of
// FragDIPs and applies each operation to a copy of it. The paper says
// fragmentation "only increases slightly" and that doubling and halving
// keep it perfect (1 rule per DIP); it gives no other figures.
func Fragmentation(c Config) ([]FragRow, error) {
	n := c.FragDIPs
	all := equalServers(2 * n)
	base := all[:n]
	fresh := make([]forwarding.Bucket, c.FragBuckets)
	applyChanges(fresh, assign.Rebalance(fresh, base, 1))
	r := rand.New(rand.NewPCG(c.Seed, 7))
	random := func(k int) []assign.Server { s, _ := removeRandom(r, base, k); return s }
	everyOther := slices.DeleteFunc(slices.Clone(base), func(s assign.Server) bool { return s.ID%2 == 0 })
	tenth := max(1, n/10)
	ops := []struct {
		name    string
		servers []assign.Server
		paper   *float64
	}{
		{"fresh", base, ptr(1.0)},
		{"add 1", all[:n+1], nil},
		{"remove 1 (random)", random(1), nil},
		{"add 10%", all[:n+tenth], nil},
		{"remove 10% (random)", random(tenth), nil},
		{"double", all, ptr(1.0)},
		{"halve (every other DIP)", everyOther, ptr(1.0)},
		{"halve (random)", random(n / 2), ptr(1.0)},
	}
	var rows []FragRow
	for _, op := range ops {
		t := slices.Clone(fresh)
		ch := assign.Rebalance(t, op.servers, 2)
		applyChanges(t, ch)
		rows = append(rows, FragRow{op.name, len(op.servers), c.FragBuckets, assign.Fragmentation(t), len(ch), op.paper})
	}
	return rows, nil
}

func applyChanges(t []forwarding.Bucket, changes []forwarding.BucketChange) {
	for _, c := range changes {
		t[c.Index] = c.Bucket
	}
}
