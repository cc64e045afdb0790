package scalebench

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// countingStore counts what a mux reads from the store: the bytes of the
// values it gets and of the child names it lists (protocol framing is not
// counted). Each follower has its own, over its own connection.
type countingStore struct {
	store.Store
	bytes atomic.Int64
	reads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (store.Item, error) {
	it, err := c.Store.Get(ctx, key)
	c.reads.Add(1)
	c.bytes.Add(int64(len(it.Value)))
	return it, err
}

func (c *countingStore) Children(ctx context.Context, key string) ([]string, error) {
	names, err := c.Store.Children(ctx, key)
	c.reads.Add(1)
	for _, n := range names {
		c.bytes.Add(int64(len(n)))
	}
	return names, err
}

// memPlane is a mux data plane in memory: what the XDP mux's maps hold,
// one 64-bit word per bucket (current owner, latest previous owner,
// change time) and the server-id table. The follower feeds it exactly as
// it feeds pkg/node/muxd's (ApplyDelta per generation, Replace on resync).
type memPlane struct {
	mu      sync.Mutex
	words   []uint64
	servers map[forwarding.ServerID]forwarding.Server
	pair    ring.Pair
	applied []appliedAt // every generation installed, with when
	resyncs int
}

type appliedAt struct {
	pair ring.Pair
	at   time.Time
}

func word(b forwarding.Bucket) uint64 {
	return uint64(b.Current) | uint64(b.History[0])<<16 | uint64(b.Changed)<<32
}

func (m *memPlane) ApplyDelta(d *forwarding.Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range d.Servers {
		if c.Remove {
			delete(m.servers, c.ID)
		} else {
			m.servers[c.ID] = c.Server
		}
	}
	for _, c := range d.Buckets {
		m.words[c.Index] = word(c.Bucket)
	}
	m.pair.Generation = d.Generation
	m.applied = append(m.applied, appliedAt{m.pair, time.Now()})
	return nil
}

func (m *memPlane) Replace(t *forwarding.Table) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.install(t)
	m.resyncs++
	return nil
}

// install copies t into the plane's compact form; t is dropped after.
func (m *memPlane) install(t *forwarding.Table) {
	if len(m.words) != len(t.Buckets) {
		m.words = make([]uint64, len(t.Buckets))
	}
	for i, b := range t.Buckets {
		m.words[i] = word(b)
	}
	m.servers = make(map[forwarding.ServerID]forwarding.Server, len(t.Servers))
	for id, s := range t.Servers {
		m.servers[id] = s
	}
	m.pair = ring.Pair{Incarnation: t.Incarnation, Generation: t.Generation}
	m.applied = append(m.applied, appliedAt{m.pair, time.Now()})
}

// reached returns when the plane first ran pair p or a later one.
func (m *memPlane) reached(p ring.Pair) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.applied {
		if !a.pair.Less(p) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// digest hashes the plane's state: equal digests, equal tables.
func (m *memPlane) digest() (ring.Pair, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pair, digestOf(m.words, m.servers)
}

func digestOf(words []uint64, servers map[forwarding.ServerID]forwarding.Server) uint64 {
	h := fnv.New64a()
	buf := make([]byte, 0, 8*4096)
	for _, w := range words {
		buf = binary.LittleEndian.AppendUint64(buf, w)
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	ids := make([]forwarding.ServerID, 0, len(servers))
	for id := range servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := servers[id]
		buf = binary.LittleEndian.AppendUint16(buf[:0], uint16(id))
		buf = binary.LittleEndian.AppendUint64(buf, s.Pack())
		h.Write(buf)
	}
	return h.Sum64()
}

// tableDigest is digestOf for a whole table (the reference).
func tableDigest(t *forwarding.Table) uint64 {
	words := make([]uint64, len(t.Buckets))
	for i, b := range t.Buckets {
		words[i] = word(b)
	}
	return digestOf(words, t.Servers)
}

// follower is one mux: its own store connection, ring.Follower (the code
// pkg/node/muxd runs) and an in-memory data plane.
type follower struct {
	st    *countingStore
	f     *ring.Follower
	plane *memPlane
	errs  atomic.Int64
	cold  time.Duration
	load  ring.LoadStats
}

// startFollower connects, cold-starts (Load, then the plane is filled as a
// mux fills its maps) and follows in the background until ctx ends.
func startFollower(ctx context.Context, open func(context.Context) (store.Store, error), k ring.Keys, errf func(error)) (*follower, error) {
	st, err := open(ctx)
	if err != nil {
		return nil, err
	}
	fl := &follower{st: &countingStore{Store: st}, plane: &memPlane{}}
	fl.f = ring.NewFollower(fl.st, k, ring.FollowerOptions{OnError: func(err error) { fl.errs.Add(1); errf(err) }})
	start := time.Now()
	t, s, err := fl.f.Load(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	fl.plane.install(t)
	fl.cold, fl.load = time.Since(start), s
	go fl.f.Run(ctx, t, fl.plane) // t is not kept past Run's own copy
	go func() { <-ctx.Done(); st.Close() }()
	return fl, nil
}
