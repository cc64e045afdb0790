// Package etcdstore implements store.Store on etcd v3, either an external
// cluster or one embedded in the beamer process (see Embedded).
//
// Mapping: a store key is an etcd key of the same name; children of K are
// the keys under the prefix K+"/". A store version is the key's etcd
// ModRevision, so IfVersion compares ModRevision (0 for an absent key).
// Leader election uses etcd's lease-based election recipe under the
// election key; the fence compares the leader key's ModRevision, which
// cannot repeat once the lease expired and the key was deleted.
package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config says how to reach an etcd cluster.
type Config struct {
	Endpoints []string // host:port or http(s)://host:port
	TLS       *tls.Config
	Username  string
	Password  string
	// DialTimeout bounds the first connection; 0 means 5 s.
	DialTimeout time.Duration
	// LeaseTTL is how long a crashed controller keeps the leadership;
	// 0 means 10 s.
	LeaseTTL time.Duration
	// MaxValueSize is the chunk limit callers must respect; 0 means 1 MiB,
	// safely under etcd's default request limit of 1.5 MiB.
	MaxValueSize int
	// Logger receives the etcd client's warnings and errors (zaplog.go);
	// nil discards them.
	Logger *slog.Logger
	// KeepAlive is how long a connection to a member may stay silent
	// while calls or watches wait on it before the client pings it (gRPC
	// allows no less than 10 s), and KeepAliveTimeout how long a ping,
	// or a request's bytes, may stay unanswered before the connection is
	// closed and its calls fail over to another member (gRPC sets it as
	// the socket's TCP_USER_TIMEOUT); 0 means DefaultKeepAlive and
	// DefaultKeepAliveTimeout. Without them a member whose link died
	// silently keeps its connection "ready", and every call the balancer
	// sends there waits until TCP gives up (issue 26: a cut follower
	// stalled publications until its link came back).
	KeepAlive, KeepAliveTimeout time.Duration
	// AutoSync, if not 0, refreshes the endpoints from the cluster's member
	// list this often (etcd's own client sync), so members added later are
	// dialled too.
	AutoSync time.Duration
}

// DefaultKeepAlive and DefaultKeepAliveTimeout: a request sent to a
// member that went silent fails over within about 2 s; a watch on it
// within about 12 s (the watch itself is re-opened, WithRequireLeader
// cancels it sooner when the member only lost its leader).
const (
	DefaultKeepAlive        = 10 * time.Second
	DefaultKeepAliveTimeout = 2 * time.Second
)

// Store is a store.Store on etcd.
type Store struct {
	cli      *clientv3.Client
	cfg      Config
	onClose  func() error
	closedCh chan struct{}
}

// Open connects to the cluster and checks it answers within DialTimeout.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcdstore: no endpoint")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 10 * time.Second
	}
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = 1 << 20
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.KeepAliveTimeout == 0 {
		cfg.KeepAliveTimeout = DefaultKeepAliveTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:        cfg.Endpoints,
		TLS:              cfg.TLS,
		Username:         cfg.Username,
		Password:         cfg.Password,
		DialTimeout:      cfg.DialTimeout,
		AutoSyncInterval: cfg.AutoSync,
		// Pings only while calls or watches wait (PermitWithoutStream
		// off): etcd counts pings on an idle connection as abuse, and
		// allows one every 5 s (--grpc-keepalive-min-time).
		DialKeepAliveTime:    cfg.KeepAlive,
		DialKeepAliveTimeout: cfg.KeepAliveTimeout,
		Logger:               zapLogger(cfg.Logger, nil),
		Context:              context.Background(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect %v: %w", cfg.Endpoints, err)
	}
	// clientv3.New does not block; ask for a key so an unreachable or
	// unauthenticated cluster is reported now, not at the first operation.
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := cli.Get(pctx, "/", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if why := diagnose(cfg.Endpoints[0], cfg.TLS, time.Second); why != "" {
			return nil, fmt.Errorf("etcdstore: etcd at %v does not answer: %w (%s)", cfg.Endpoints, err, why)
		}
		return nil, fmt.Errorf("etcdstore: etcd at %v does not answer: %w", cfg.Endpoints, err)
	}
	return &Store{cli: cli, cfg: cfg, closedCh: make(chan struct{})}, nil
}

func wrap(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrTooManyOps),
		status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("etcdstore: %s %s: %w: %v", op, key, store.ErrTooLarge, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("etcdstore: %s %s: %w", op, key, err)
	}
	return fmt.Errorf("etcdstore: %s %s: %v", op, key, err)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Item, error) {
	if err := store.ValidKey(key); err != nil {
		return store.Item{}, err
	}
	r, err := s.cli.Get(ctx, key)
	if err != nil {
		return store.Item{}, wrap("get", key, err)
	}
	if len(r.Kvs) == 0 {
		return store.Item{}, fmt.Errorf("%w: %s", store.ErrNotFound, key)
	}
	return store.Item{Value: r.Kvs[0].Value, Version: r.Kvs[0].ModRevision}, nil
}

// childPage is how many keys one range request of Children returns.
const childPage = 1000

// Children implements store.Store. etcd has no directories: the children
// are the distinct next path elements of the keys under key+"/". Keys are
// read a page at a time, and the subtree of the last child of a page is
// skipped in one jump: listing the instances under a root holding 64K DIP
// records (which pollers do several times a second) reads a few keys, not
// every key below (6 MB, a second of etcd's time, at the paper's scale).
// Pages after the first read the first page's revision: one snapshot.
func (s *Store) Children(ctx context.Context, key string) ([]string, error) {
	if err := store.ValidKey(key); err != nil {
		return nil, err
	}
	prefix := key + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	seen := map[string]bool{}
	names := []string{}
	start, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(childPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		r, err := s.cli.Get(ctx, start, opts...)
		if err != nil {
			return nil, wrap("children", key, err)
		}
		rev = r.Header.Revision
		for _, kv := range r.Kvs {
			name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
			if name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		last := string(r.Kvs[len(r.Kvs)-1].Key)
		name, _, deeper := strings.Cut(strings.TrimPrefix(last, prefix), "/")
		if deeper {
			start = prefix + name + "0" // '0' follows '/': past name's subtree
		} else {
			start = last + "\x00"
		}
	}
	sort.Strings(names)
	return names, nil
}

// Commit implements store.Store as one etcd transaction.
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	if err := store.CheckOps(ops, s.cfg.MaxValueSize); err != nil {
		return fmt.Errorf("etcdstore: %w", err)
	}
	var conds []clientv3.Cmp
	var writes []clientv3.Op
	for _, op := range ops {
		switch op.Kind {
		case store.OpPut:
			writes = append(writes, clientv3.OpPut(op.Key, string(op.Value)))
		case store.OpDelete:
			writes = append(writes, clientv3.OpDelete(op.Key))
		case store.OpCheck:
			conds = append(conds, clientv3.Compare(clientv3.ModRevision(op.Key), "=", op.Version))
		default:
			return fmt.Errorf("etcdstore: unknown op kind %d", op.Kind)
		}
	}
	r, err := s.cli.Txn(ctx).If(conds...).Then(writes...).Commit()
	if err != nil {
		return wrap("commit", firstKey(ops), err)
	}
	if !r.Succeeded {
		return fmt.Errorf("etcdstore: commit %s: %w", firstKey(ops), store.ErrConflict)
	}
	return nil
}

func firstKey(ops []store.Op) string {
	for _, op := range ops {
		if op.Kind != store.OpCheck {
			return op.Key
		}
	}
	if len(ops) > 0 {
		return ops[0].Key
	}
	return "(empty)"
}

// MaxValueSize implements store.Store.
func (s *Store) MaxValueSize() int { return s.cfg.MaxValueSize }

// Client exposes the etcd client, for tools that need etcd itself.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Close implements store.Store; an embedded server is stopped too.
func (s *Store) Close() error {
	select {
	case <-s.closedCh:
		return nil
	default:
	}
	close(s.closedCh)
	err := s.cli.Close()
	if s.onClose != nil {
		err = errors.Join(err, s.onClose())
	}
	return err
}

// Campaign implements store.Store with a lease-backed election.
func (s *Store) Campaign(ctx context.Context, key, identity string) (store.Leadership, error) {
	if err := store.ValidKey(key); err != nil {
		return nil, err
	}
	ttl := max(int(s.cfg.LeaseTTL/time.Second), 1)
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(ttl), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, wrap("campaign", key, err)
	}
	el := concurrency.NewElection(sess, key)
	if err := el.Campaign(ctx, identity); err != nil {
		sess.Close()
		return nil, wrap("campaign", key, err)
	}
	r, err := s.cli.Get(ctx, el.Key())
	if err != nil || len(r.Kvs) == 0 {
		sess.Close()
		if err == nil {
			err = errors.New("leader key vanished right after winning")
		}
		return nil, wrap("campaign", key, err)
	}
	return &leadership{sess: sess, el: el, key: el.Key(), rev: r.Kvs[0].ModRevision}, nil
}

type leadership struct {
	sess *concurrency.Session
	el   *concurrency.Election
	key  string
	rev  int64
}

func (l *leadership) Fence() store.Op       { return store.IfVersion(l.key, l.rev) }
func (l *leadership) Lost() <-chan struct{} { return l.sess.Done() }
func (l *leadership) Resign(ctx context.Context) error {
	err := l.el.Resign(ctx)
	return errors.Join(err, l.sess.Close())
}

// Leader implements store.Store: the leader is the election key created
// first (the recipe's candidates queue by creation revision).
func (s *Store) Leader(ctx context.Context, key string) (string, error) {
	if err := store.ValidKey(key); err != nil {
		return "", err
	}
	r, err := s.cli.Get(ctx, key+"/", append(clientv3.WithFirstCreate(), clientv3.WithPrefix())...)
	if err != nil {
		return "", wrap("leader", key, err)
	}
	if len(r.Kvs) == 0 {
		return "", fmt.Errorf("%w: no leader for %s", store.ErrNotFound, key)
	}
	return string(r.Kvs[0].Value), nil
}

// Watch implements store.Store. A broken etcd watch (compaction, leader
// loss, connection loss) is re-established after a pause, and the receiver
// is notified so that it re-reads what it may have missed.
func (s *Store) Watch(ctx context.Context, key string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-s.closedCh:
				cancel()
			case <-wctx.Done():
			}
		}()
		pause := store.NewBackoff(100*time.Millisecond, 5*time.Second)
		for wctx.Err() == nil {
			w := s.cli.Watch(clientv3.WithRequireLeader(wctx), key)
			store.Notify(ch)
			healthy := false
			for resp := range w {
				if resp.Err() != nil || resp.Canceled {
					break
				}
				healthy = true
				if len(resp.Events) > 0 {
					store.Notify(ch)
				}
			}
			if healthy {
				pause.Reset()
			}
			if !pause.Sleep(wctx) {
				return
			}
		}
	}()
	return ch
}
