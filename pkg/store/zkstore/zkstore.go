// Package zkstore implements store.Store on ZooKeeper, the store of the
// Beamer paper.
//
// Mapping: a store key is the znode of the same path. ZooKeeper needs
// parents to exist, so Commit creates missing parents first (outside the
// atomic multi-op: empty parents are harmless) and deleting a key prunes
// parents left without value and children. To tell "a znode that exists
// only as a parent" from "a key whose value is empty", every value is
// stored behind a one-byte marker (valueMark); parents have no data at all.
//
// Versions are the znode's Mzxid (the zxid of its last write, unique in the
// ensemble, so a deleted and re-created key never repeats a version). A
// condition is checked by reading the znode's stat before the multi-op and
// adding a CheckVersion on its data version to the multi-op, so a write
// between the read and the commit still fails the commit.
//
// Leader election is the classic recipe: ephemeral sequential znodes under
// the election key, lowest sequence leads, each candidate watches its
// predecessor. The fence is a condition on the leader's own znode, which
// ZooKeeper deletes when the session expires.
package zkstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/go-zookeeper/zk"
)

// valueMark prefixes every stored value (see the package comment).
const valueMark = 'v'

// Config says how to reach a ZooKeeper ensemble.
type Config struct {
	Servers []string // host:port
	// SessionTimeout is how long the ensemble keeps the session (and a
	// crashed controller's leadership) without hearing from us; 0 = 10 s.
	SessionTimeout time.Duration
	// DialTimeout bounds the wait for the first session; 0 = 10 s.
	DialTimeout time.Duration
	// Username and Password, if set, authenticate with the digest scheme
	// and protect created znodes with a digest ACL for that user.
	Username, Password string
	// TLS, if set, connects over TLS (the ensemble's secureClientPort).
	TLS *tls.Config
	// MaxValueSize: 0 means 1000 KiB, under ZooKeeper's default
	// jute.maxbuffer of 1 MiB with room for the request framing.
	MaxValueSize int
	// Logger receives the ZooKeeper client's errors (zklog.go); nil
	// discards them.
	Logger *slog.Logger
}

// Store is a store.Store on ZooKeeper.
type Store struct {
	conn *zk.Conn
	cfg  Config
	acl  []zk.ACL

	mu         sync.Mutex
	reconnects []chan struct{} // notified when a session is (re)established
	closed     chan struct{}
	closeOnce  sync.Once
}

// Open connects and waits for a session.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zkstore: no server")
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = 1000 << 10
	}
	s := &Store{cfg: cfg, closed: make(chan struct{}), acl: zk.WorldACL(zk.PermAll)}
	if cfg.Username != "" {
		s.acl = zk.DigestACL(zk.PermAll, cfg.Username, cfg.Password)
	}
	session := make(chan struct{}, 1)
	opts := options(zk.WithLogger(newZKLogger(cfg.Logger, s.closed)), zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				select {
				case session <- struct{}{}:
				default:
				}
				s.broadcastReconnect()
			}
		}))
	if cfg.TLS != nil {
		opts = append(opts, zk.WithDialer(tlsDialer(cfg.TLS)))
	}
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, opts...)
	if err != nil {
		return nil, fmt.Errorf("zkstore: connect %v: %w", cfg.Servers, err)
	}
	s.conn = conn
	t := time.NewTimer(cfg.DialTimeout)
	defer t.Stop()
	select {
	case <-session:
	case <-t.C:
		conn.Close()
		return nil, fmt.Errorf("zkstore: no ZooKeeper session with %v after %v", cfg.Servers, cfg.DialTimeout)
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("zkstore: connect %v: %w", cfg.Servers, ctx.Err())
	}
	if cfg.Username != "" {
		if err := conn.AddAuth("digest", []byte(cfg.Username+":"+cfg.Password)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("zkstore: authenticate as %q: %w", cfg.Username, err)
		}
	}
	return s, nil
}

func (s *Store) broadcastReconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.reconnects {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (s *Store) onReconnect() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.reconnects = append(s.reconnects, c)
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reconnects = slices.DeleteFunc(s.reconnects, func(x chan struct{}) bool { return x == c })
	}
}

// do runs a blocking ZooKeeper call, giving up when ctx ends (the call
// itself finishes in the background: go-zookeeper has no cancellation).
func do[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() { v, err := f(); ch <- result{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (s *Store) wrap(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: %s", store.ErrNotFound, key)
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing):
		select {
		case <-s.closed:
			return fmt.Errorf("zkstore: %s %s: %w", op, key, store.ErrClosed)
		default:
		}
	}
	return fmt.Errorf("zkstore: %s %s: %w", op, key, err)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Item, error) {
	if err := store.ValidKey(key); err != nil {
		return store.Item{}, err
	}
	type got struct {
		data []byte
		stat *zk.Stat
	}
	g, err := do(ctx, func() (got, error) { d, st, err := s.conn.Get(key); return got{d, st}, err })
	if err != nil {
		return store.Item{}, s.wrap("get", key, err)
	}
	if len(g.data) == 0 || g.data[0] != valueMark {
		return store.Item{}, fmt.Errorf("%w: %s", store.ErrNotFound, key)
	}
	return store.Item{Value: g.data[1:], Version: g.stat.Mzxid}, nil
}

// Children implements store.Store.
func (s *Store) Children(ctx context.Context, key string) ([]string, error) {
	if err := store.ValidKey(key); err != nil {
		return nil, err
	}
	names, err := do(ctx, func() ([]string, error) { c, _, err := s.conn.Children(key); return c, err })
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, s.wrap("children", key, err)
	}
	slices.Sort(names)
	return names, nil
}

// MaxValueSize implements store.Store.
func (s *Store) MaxValueSize() int { return s.cfg.MaxValueSize }

// Close implements store.Store.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.conn.Close()
	})
	return nil
}

// ensureParents creates the missing ancestors of key as data-less znodes.
func (s *Store) ensureParents(ctx context.Context, key string) error {
	parts := strings.Split(key, "/")[1:]
	p := ""
	for _, name := range parts[:len(parts)-1] {
		p += "/" + name
		_, err := do(ctx, func() (string, error) { return s.conn.Create(p, nil, 0, s.acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return s.wrap("create parent", p, err)
		}
	}
	return nil
}

// prune deletes the data-less ancestors of key that have no children left,
// nearest first. It is best effort: a parent that gained a child or a
// value meanwhile simply stays.
func (s *Store) prune(ctx context.Context, key string) {
	for p := parent(key); p != "" && p != "/"; p = parent(p) {
		d, st, err := s.conn.Get(p)
		if err != nil || len(d) != 0 || st.NumChildren != 0 {
			return
		}
		if err := s.conn.Delete(p, st.Version); err != nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func parent(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return ""
	}
	return key[:i]
}

// Sync implements store.Syncer: ZooKeeper's sync brings the server this
// connection reads from up to the ensemble leader's latest write.
func (s *Store) Sync(ctx context.Context) error {
	_, err := do(ctx, func() (string, error) { return s.conn.Sync("/") })
	return s.wrap("sync", "/", err)
}
