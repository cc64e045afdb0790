package store

import "context"

// deleteBatch bounds how many deletes go into one Commit: ZooKeeper limits a
// multi-op request to about 1 MB and etcd to a configurable op count (128 by
// default).
const deleteBatch = 100

// DeleteTree removes key and all its descendants, deepest first, in batches.
// It is not atomic: callers make the tree unreachable first (for the mux
// ring, by moving the pointers past it) so a partial deletion is harmless
// and a later DeleteTree finishes it.
func DeleteTree(ctx context.Context, s Store, key string) error {
	var keys []string
	if err := collect(ctx, s, key, &keys, 0); err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		ops := make([]Op, n)
		for i, k := range keys[:n] {
			ops[i] = Delete(k)
		}
		if err := s.Commit(ctx, ops...); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// maxTreeDepth guards against runaway recursion on a corrupted hierarchy.
const maxTreeDepth = 32

// collect appends the descendants of key, children before parents.
func collect(ctx context.Context, s Store, key string, out *[]string, depth int) error {
	if depth > maxTreeDepth {
		return nil
	}
	names, err := s.Children(ctx, key)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := collect(ctx, s, Join(key, n), out, depth+1); err != nil {
			return err
		}
	}
	*out = append(*out, key)
	return nil
}
