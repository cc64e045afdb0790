package hashsim

import (
	"math/rand/v2"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Table1Row is one row of Beamer's appendix Table 1 for one churn level.
// Imbalance and RangeRules describe the table before churn (they do not
// depend on it; the paper prints them once per algorithm); the *After
// fields describe it after the removal, averaged over the repetitions.
type Table1Row struct {
	Algorithm  string  `json:"algorithm"`
	Servers    int     `json:"servers"`
	Buckets    uint32  `json:"buckets"`
	ChurnPct   int     `json:"churn_pct"`
	Removed    int     `json:"removed"`
	Imbalance  float64 `json:"imbalance"`
	RangeRules int     `json:"range_rules"`
	// InnocentDisruptionPct: entries whose server survived but which now
	// point elsewhere, as a percentage of all entries — the share of all
	// ongoing connections broken though their server is still there.
	InnocentDisruptionPct float64     `json:"innocent_disruption_pct"`
	ChangedEntriesPct     float64     `json:"changed_entries_pct"`
	ImbalanceAfter        float64     `json:"imbalance_after"`
	RangeRulesAfter       float64     `json:"range_rules_after"`
	Paper                 Table1Paper `json:"paper"`
}

// Table1Paper holds the figures the paper gives (nil where it gives none).
type Table1Paper struct {
	Imbalance             *float64 `json:"imbalance,omitempty"`
	RangeRules            *int     `json:"range_rules,omitempty"`
	InnocentDisruptionPct *float64 `json:"innocent_disruption_pct,omitempty"`
	Note                  string   `json:"note,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// paperTable1 is what the Beamer appendix states: "Maglev and Stable have
// near-perfect load balancing, while Consistent hashing places twice more
// load on one unlucky server"; Stable needs one rule per server, Maglev
// "as many rules as buckets", Consistent "somewhere in the middle"; Stable
// and Consistent disrupt no innocent connection, Maglev 2.3%–3.3% (we read
// the range as 1% → 2.3, 5% → 3.3). The paper does not evaluate rendezvous.
func paperTable1(alg string, servers int, buckets uint32, churn int) Table1Paper {
	switch alg {
	case "stable":
		return Table1Paper{Imbalance: ptr(1.0), RangeRules: ptr(servers), InnocentDisruptionPct: ptr(0.0), Note: "imbalance: 'near-perfect'"}
	case "maglev":
		p := Table1Paper{Imbalance: ptr(1.0), RangeRules: ptr(int(buckets)), Note: "imbalance: 'near-perfect'; rules: 'as many as buckets'"}
		switch churn {
		case 1:
			p.InnocentDisruptionPct = ptr(2.3)
		case 5:
			p.InnocentDisruptionPct = ptr(3.3)
		}
		return p
	case "consistent":
		return Table1Paper{Imbalance: ptr(2.0), InnocentDisruptionPct: ptr(0.0), Note: "rules: 'somewhere in the middle'; virtual nodes not stated"}
	}
	return Table1Paper{Note: "not in the paper"}
}

// Table1 builds each algorithm's table for Table1Servers servers of equal
// weight, then removes Churn% of them at random and measures what moved.
// Every repetition draws a new set of server ids, so the figures are
// averages over Reps tables rather than one lucky or unlucky draw.
func Table1(c Config) ([]Table1Row, error) {
	var rows []Table1Row
	for _, alg := range []algorithm{stable(), maglev(), consistent(c.Table1VNodes), rendezvous()} {
		first := len(rows)
		for _, churn := range c.Table1Churn {
			rows = append(rows, Table1Row{Algorithm: alg.name, Servers: c.Table1Servers, Buckets: c.Table1Buckets, ChurnPct: churn,
				Removed: max(1, c.Table1Servers*churn/100), Paper: paperTable1(alg.name, c.Table1Servers, c.Table1Buckets, churn)})
		}
		r := rand.New(rand.NewPCG(c.Seed, 1))
		reps := float64(c.Reps)
		for range c.Reps {
			servers := randomServers(r, c.Table1Servers)
			before, err := alg.build(nil, servers, c.Table1Buckets)
			if err != nil {
				return nil, err
			}
			imb, rules := imbalance(before, servers), assign.RangeRules(before)
			for i := range c.Table1Churn {
				row := &rows[first+i]
				survivors, gone := removeRandom(r, servers, row.Removed)
				after, err := alg.build(before, survivors, c.Table1Buckets)
				if err != nil {
					return nil, err
				}
				innocent, changed := disruption(before, after, gone)
				row.Imbalance += imb / reps
				row.RangeRules += rules
				row.InnocentDisruptionPct += innocent / reps
				row.ChangedEntriesPct += changed / reps
				row.ImbalanceAfter += imbalance(after, survivors) / reps
				row.RangeRulesAfter += float64(assign.RangeRules(after)) / reps
			}
		}
		for i := first; i < len(rows); i++ {
			rows[i].RangeRules = int(float64(rows[i].RangeRules)/reps + 0.5)
		}
	}
	return rows, nil
}

// randomServers returns n servers of weight 1 with distinct random ids.
func randomServers(r *rand.Rand, n int) []assign.Server {
	s := make([]assign.Server, n)
	for i, k := range r.Perm(maxServers)[:n] {
		s[i] = assign.Server{ID: forwarding.MinServerID + forwarding.ServerID(k), Weight: 1}
	}
	return s
}

// removeRandom returns servers without k of them chosen at random, and a
// per-id mark of the removed ones.
func removeRandom(r *rand.Rand, servers []assign.Server, k int) ([]assign.Server, []bool) {
	gone := make([]bool, int(forwarding.MaxServerID)+1)
	for _, i := range r.Perm(len(servers))[:k] {
		gone[servers[i].ID] = true
	}
	survivors := slices.DeleteFunc(slices.Clone(servers), func(s assign.Server) bool { return gone[s.ID] })
	return survivors, gone
}

// disruption returns the percentages of entries that changed though their
// server survived (innocent) and of entries that changed at all.
func disruption(before, after []forwarding.ServerID, gone []bool) (innocent, changed float64) {
	var in, ch int
	for i := range before {
		if before[i] != after[i] {
			ch++
			if !gone[before[i]] {
				in++
			}
		}
	}
	n := float64(len(before))
	return 100 * float64(in) / n, 100 * float64(ch) / n
}
