package controller

import (
	"context"

	"github.com/beamer-lb/beamer/pkg/store"
)

// commitOps bounds the operations of one commit: etcd refuses a
// transaction of more than 128 (its --max-txn-ops default) and ZooKeeper a
// multi-op request over 1 MB. Even, so that a condition and the write it
// guards (IfAbsent + Put) never land in different commits.
const commitOps = 100

// commitBatches writes ops in commits of at most commitOps operations and
// half a store value of data each, in order. Records of a request of many
// DIPs (the paper adds 32K at once) cannot go in one commit; each record
// is written with its own condition, and a crash between commits leaves
// some records written: they are complete records, which the next
// controller reconciles like any other, and the request, run again, finds
// them and writes the rest.
func (c *Controller) commitBatches(ctx context.Context, in *instance, ops []store.Op) error {
	limit := c.st.MaxValueSize() / 2
	for len(ops) > 0 {
		n, bytes := 0, 0
		for n < len(ops) && n < commitOps {
			pair := 1
			if ops[n].Kind == store.OpCheck && n+1 < len(ops) {
				pair = 2 // keep a condition with its write
			}
			size := 0
			for _, op := range ops[n : n+pair] {
				size += len(op.Value)
			}
			if n > 0 && (n+pair > commitOps || bytes+size > limit) {
				break
			}
			n, bytes = n+pair, bytes+size
		}
		if err := c.commit(ctx, in, ops[:n]...); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}
