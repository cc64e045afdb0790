package controller

import (
	"fmt"
	"github.com/beamer-lb/beamer/pkg/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MaglevEntriesPerBackend is the table size per backend Maglev recommends
// (§3.4, §5.3: M ≫ N, "M > 100·N"): below it the entry shares, and so the
// backends' loads, stray further from the weights. ctl show warns below it.
const MaglevEntriesPerBackend = 100

// CheckInstance validates a configuration for creation. Every rule on one
// instance, the strategy's included (a Maglev table size must be prime), is
// forwarding.Instance.Validate's, so that ctl, requests, static files and
// muxes reading the store refuse the same things with the same words.
func CheckInstance(in *forwarding.Instance) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if err := in.Health.Check(); err != nil {
		return fmt.Errorf("%w %q: %v", forwarding.ErrConfig, in.Name, err)
	}
	return nil
}

// bucketMoves decides the bucket changes of the next generation.
//
// beamer: the paper's greedy rebalance, youngest buckets last, buckets
// with a full history not at all unless their owner leaves; each move names in History[0] the
// owner the bucket moved from, and plan turns it into the bucket's history
// (history.go).
//
// maglev: the Buckets array is the Maglev lookup table (B = M, prime),
// rebuilt from scratch over the live backends and their weights; only
// entries whose owner differs are published, with Previous and Changed 0
// (no daisy chaining: muxes keep established connections in their
// connection tables instead).
func bucketMoves(cfg *forwarding.Instance, buckets []forwarding.Bucket, servers []assign.Server, down map[forwarding.ServerID]bool, now uint32) ([]forwarding.BucketChange, error) {
	if cfg.Strategy == forwarding.StrategyMaglev {
		table, err := assign.MaglevTable(servers, uint32(len(buckets)))
		if err != nil {
			return nil, err
		}
		var moves []forwarding.BucketChange
		for i, owner := range table {
			if buckets[i] != (forwarding.Bucket{Current: owner}) {
				moves = append(moves, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: owner}})
			}
		}
		return moves, nil
	}
	// A bucket whose history already names K owners stays with an owner
	// that stays: moving it would forget the oldest (assign.RebalanceLimited).
	return assign.RebalanceLimited(buckets, servers, now, cfg.ChainLen()), nil
}
