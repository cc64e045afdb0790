package zkstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/go-zookeeper/zk"
)

// candidatePrefix names candidate znodes; the sequence number follows it.
const candidatePrefix = "c-"

// Campaign implements store.Store.
func (s *Store) Campaign(ctx context.Context, key, identity string) (store.Leadership, error) {
	if err := store.ValidKey(key); err != nil {
		return nil, err
	}
	if err := s.ensureParents(ctx, key+"/x"); err != nil {
		return nil, err
	}
	me, err := do(ctx, func() (string, error) {
		return s.conn.Create(key+"/"+candidatePrefix, append([]byte{valueMark}, identity...), zk.FlagEphemeralSequential, s.acl)
	})
	if err != nil {
		return nil, s.wrap("campaign", key, err)
	}
	withdraw := func() { s.conn.Delete(me, -1) }
	for {
		names, err := do(ctx, func() ([]string, error) { c, _, err := s.conn.Children(key); return c, err })
		if err != nil {
			withdraw()
			return nil, s.wrap("campaign", key, err)
		}
		cands := candidates(names)
		mine := slices.Index(cands, me[len(key)+1:])
		if mine < 0 {
			// Our znode is gone: the session expired while we waited.
			return nil, fmt.Errorf("zkstore: campaign %s: candidate znode lost (session expired)", key)
		}
		if mine == 0 {
			_, st, err := s.conn.Exists(me)
			if err != nil || st == nil {
				withdraw()
				return nil, s.wrap("campaign", key, errors.Join(err, zk.ErrNoNode))
			}
			return s.newLeadership(me, st.Mzxid), nil
		}
		// Wait for the candidate just before us to go, then look again.
		ok, _, ev, err := s.conn.ExistsW(key + "/" + cands[mine-1])
		if err != nil {
			withdraw()
			return nil, s.wrap("campaign", key, err)
		}
		if !ok {
			continue
		}
		select {
		case <-ev:
		case <-ctx.Done():
			withdraw()
			return nil, ctx.Err()
		case <-s.closed:
			return nil, store.ErrClosed
		}
	}
}

// candidates returns the candidate znode names in sequence order. The
// sequence is the fixed-width decimal suffix ZooKeeper appends, so names
// sort like their sequence numbers.
func candidates(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, candidatePrefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Leader implements store.Store.
func (s *Store) Leader(ctx context.Context, key string) (string, error) {
	if err := store.ValidKey(key); err != nil {
		return "", err
	}
	names, err := s.Children(ctx, key)
	if err != nil {
		return "", err
	}
	for _, c := range candidates(names) {
		it, err := s.Get(ctx, key+"/"+c)
		if errors.Is(err, store.ErrNotFound) {
			continue // went away since the listing
		}
		if err != nil {
			return "", err
		}
		return string(it.Value), nil
	}
	return "", fmt.Errorf("%w: no leader for %s", store.ErrNotFound, key)
}

type leadership struct {
	s       *Store
	path    string
	version int64
	lost    chan struct{}
	once    sync.Once
	cancel  context.CancelFunc
}

func (s *Store) newLeadership(path string, version int64) *leadership {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leadership{s: s, path: path, version: version, lost: make(chan struct{}), cancel: cancel}
	go l.watch(ctx)
	return l
}

// watch closes lost when the leader znode goes away or the session expires.
func (l *leadership) watch(ctx context.Context) {
	defer l.markLost()
	for {
		ok, _, ev, err := l.s.conn.ExistsW(l.path)
		if err != nil || !ok {
			return
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNodeDeleted || e.Type == zk.EventNotWatching || e.State == zk.StateExpired {
				return
			}
		case <-ctx.Done():
			return
		case <-l.s.closed:
			return
		}
	}
}

func (l *leadership) markLost() { l.once.Do(func() { close(l.lost) }) }

func (l *leadership) Fence() store.Op       { return store.IfVersion(l.path, l.version) }
func (l *leadership) Lost() <-chan struct{} { return l.lost }
func (l *leadership) Resign(ctx context.Context) error {
	defer l.cancel()
	_, err := do(ctx, func() (struct{}, error) { return struct{}{}, l.s.conn.Delete(l.path, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	return l.s.wrap("resign", l.path, err)
}
