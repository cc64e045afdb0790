package zkstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/go-zookeeper/zk"
)

// commitAttempts bounds retries of a Commit whose plan was invalidated by a
// concurrent change of an unconditioned key (a Put planned as a create of a
// znode that appeared meanwhile, a parent pruned meanwhile, …).
const commitAttempts = 5

// Commit implements store.Store as one ZooKeeper multi-op.
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	if err := store.CheckOps(ops, s.cfg.MaxValueSize); err != nil {
		return fmt.Errorf("zkstore: %w", err)
	}
	var err error
	for range commitAttempts {
		var retry bool
		retry, err = s.commitOnce(ctx, ops)
		if !retry {
			return err
		}
	}
	return err
}

// commitOnce plans the multi-op from the current znode stats and runs it.
// retry is true when the failure came from the plan going stale rather
// than from a condition.
func (s *Store) commitOnce(ctx context.Context, ops []store.Op) (retry bool, err error) {
	var reqs []any
	var source []int // reqs[i] comes from ops[source[i]]
	var deleted []string
	stats, err := s.stats(ctx, ops)
	if err != nil {
		return false, err
	}
	ensured := map[string]bool{} // parents created in this attempt
	for i, op := range ops {
		st := stats[i]
		exists := st != nil
		switch op.Kind {
		case store.OpCheck:
			if op.Version == 0 {
				if exists && st.DataLength > 0 {
					return false, fmt.Errorf("zkstore: commit: %s exists: %w", op.Key, store.ErrConflict)
				}
				if exists {
					// A data-less parent counts as absent; pin it.
					reqs = append(reqs, &zk.CheckVersionRequest{Path: op.Key, Version: st.Version})
					source = append(source, i)
				}
				continue
			}
			if !exists || st.Mzxid != op.Version || st.DataLength == 0 {
				return false, fmt.Errorf("zkstore: commit: %s changed: %w", op.Key, store.ErrConflict)
			}
			reqs = append(reqs, &zk.CheckVersionRequest{Path: op.Key, Version: st.Version})
		case store.OpPut:
			data := append([]byte{valueMark}, op.Value...)
			if exists {
				reqs = append(reqs, &zk.SetDataRequest{Path: op.Key, Data: data, Version: -1})
			} else {
				if p := parent(op.Key); !ensured[p] {
					if err := s.ensureParents(ctx, op.Key); err != nil {
						return false, err
					}
					ensured[p] = true
				}
				reqs = append(reqs, &zk.CreateRequest{Path: op.Key, Data: data, Acl: s.acl})
			}
		case store.OpDelete:
			switch {
			case !exists || st.DataLength == 0:
				continue // no value to delete
			case st.NumChildren > 0:
				// etcd semantics: the value goes, the children stay.
				reqs = append(reqs, &zk.SetDataRequest{Path: op.Key, Data: nil, Version: -1})
			default:
				reqs = append(reqs, &zk.DeleteRequest{Path: op.Key, Version: -1})
				deleted = append(deleted, op.Key)
			}
		default:
			return false, fmt.Errorf("zkstore: unknown op kind %d", op.Kind)
		}
		source = append(source, i)
	}
	if len(reqs) == 0 {
		return false, nil
	}
	res, err := do(ctx, func() ([]zk.MultiResponse, error) { return s.conn.Multi(reqs...) })
	if err == nil {
		for _, k := range deleted {
			s.prune(ctx, k)
		}
		return false, nil
	}
	for j, r := range res {
		if r.Error == nil || j >= len(source) {
			continue
		}
		if !errors.Is(r.Error, zk.ErrNoNode) && !errors.Is(r.Error, zk.ErrBadVersion) &&
			!errors.Is(r.Error, zk.ErrNodeExists) && !errors.Is(r.Error, zk.ErrNotEmpty) {
			continue // "rolled back because another op failed"
		}
		op := ops[source[j]]
		if op.Kind == store.OpCheck {
			return false, fmt.Errorf("zkstore: commit: %s changed: %w", op.Key, store.ErrConflict)
		}
		return true, fmt.Errorf("zkstore: commit %s: %w", op.Key, r.Error)
	}
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
		return true, fmt.Errorf("zkstore: commit %s: %w", ops[0].Key, err)
	}
	return false, s.wrap("commit", ops[0].Key, err)
}

// statConcurrency bounds the Exists requests of one commit in flight at
// once. They are independent reads on one session, which ZooKeeper answers
// in order: sent together, a commit of 100 operations waits about one
// round trip for its plan instead of 100 (records of a 32K-DIP request go
// in hundreds of such commits).
const statConcurrency = 32

// stats reads the stat of every op's key (nil: no znode), concurrently.
func (s *Store) stats(ctx context.Context, ops []store.Op) ([]*zk.Stat, error) {
	out := make([]*zk.Stat, len(ops))
	errs := make([]error, len(ops))
	sem := make(chan struct{}, statConcurrency)
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = do(ctx, func() (*zk.Stat, error) {
				ok, st, err := s.conn.Exists(op.Key)
				if !ok {
					st = nil
				}
				return st, err
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, s.wrap("commit", ops[i].Key, err)
		}
	}
	return out, nil
}
