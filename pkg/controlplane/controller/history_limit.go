package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// The K limit (issue 28): a bucket's history names at most K previous
// owners (max_chain), so a move that leaves K+1 pushes one out, and the
// connections that owner still holds there break. The holds (holds.go)
// know which owners still hold connections: when a history overflows, the
// entries known to hold nothing leave first (forwarding.HistoryRules.Idle),
// and every holder that must leave anyway is counted per instance and
// server (metrics), logged once per generation and server with its buckets
// and connections, and recorded beside the ring for `ctl show`.

// HoldCountFunc reports what the agents last said of server id's
// connections in bucket: n (known: a recent answer exists), and whether
// that answer was asked long enough after since (Unix seconds) — when the
// server could no longer take new connections of the bucket — to be
// trusted as final.
type HoldCountFunc func(instance string, id forwarding.ServerID, bucket uint32, since uint32) (n uint32, settled, known bool)

// historyCut is one history entry a move pushed out because of K.
type historyCut struct {
	id     forwarding.ServerID
	bucket uint32
	idle   bool   // chosen because it was known to hold nothing
	known  bool   // the agent's count is known (else: unknown)
	conns  uint32 // connections it held there, as last reported
}

// limitHistories sets the K-limit hooks of h for instance in: without
// connection counts (no holds) the oldest entries leave, unreported.
func (c *Controller) limitHistories(in *instance, h *forwarding.HistoryRules) {
	counts, name := c.opts.HoldCounts, in.config.Name
	if counts == nil {
		return
	}
	// Agents count TCP connections only (agentapi): an instance with a UDP
	// service may have UDP flows on an owner that reports none, so none is
	// known idle there and the oldest leave, as before.
	udp := slices.ContainsFunc(in.config.Services, func(s forwarding.Service) bool { return s.Protocol == forwarding.UDP })
	if !c.opts.EvictOldest && !udp {
		h.Idle = func(id forwarding.ServerID, bucket uint32, since uint32) bool {
			n, settled, known := counts(name, id, bucket, since)
			if known && settled && n == 0 {
				in.cut = append(in.cut, historyCut{id: id, bucket: bucket, idle: true, known: true})
				return true
			}
			return false
		}
	}
	h.Evicted = func(id forwarding.ServerID, bucket uint32) {
		n, _, known := counts(name, id, bucket, 0)
		in.cut = append(in.cut, historyCut{id: id, bucket: bucket, known: known, conns: n})
	}
}

// HistoryEvictions is what `ctl show` reads of the K limit: per server,
// every eviction of a holder so far, and the latest events.
type HistoryEvictions struct {
	K       int                                     `json:"max_chain"`
	Servers map[forwarding.ServerID]*EvictionTotals `json:"servers"`
	Recent  []EvictionEvent                         `json:"recent"`
}

// EvictionTotals count one server's evictions from histories while it held
// connections there.
type EvictionTotals struct {
	Buckets     uint64 `json:"buckets"`
	Connections uint64 `json:"connections"`
}

// EvictionEvent is one generation's evictions of one server.
type EvictionEvent struct {
	At          time.Time           `json:"at"`
	Generation  uint32              `json:"generation"`
	Server      forwarding.ServerID `json:"server"`
	Buckets     []BucketConns       `json:"buckets"` // the first maxEventBuckets
	MoreBuckets int                 `json:"more_buckets,omitempty"`
	Connections uint64              `json:"connections"`
	// Avoiding: the controller tried to keep it (every other owner in
	// those histories held connections or was not known to be idle).
	Avoiding bool `json:"avoiding"`
}

// BucketConns is a bucket and the connections a server had there.
type BucketConns struct {
	Bucket      uint32 `json:"bucket"`
	Connections uint32 `json:"connections"`
}

const (
	maxEventBuckets = 16
	maxRecentEvents = 16
)

// evictionsKey is where the record lives: beside the ring, not in it.
func evictionsKey(k ring.Keys) string { return k.Instance + "/history-evictions" }

// readEvictions reads the record; nil when there is none.
func readEvictions(ctx context.Context, st store.Store, k ring.Keys) (*HistoryEvictions, error) {
	it, err := st.Get(ctx, evictionsKey(k))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r HistoryEvictions
	if err := json.Unmarshal(it.Value, &r); err != nil {
		return nil, fmt.Errorf("history evictions record: %w", err)
	}
	return &r, nil
}

// reportCuts reports what the generation gen just published pushed out of
// histories: metrics for every entry, a log line and the store record for
// holders.
func (c *Controller) reportCuts(ctx context.Context, in *instance, gen uint32) error {
	cuts := in.cut
	in.cut = nil
	if len(cuts) == 0 {
		return nil
	}
	name := in.config.Name
	k := in.config.ChainLen()
	byServer := map[forwarding.ServerID][]historyCut{}
	var unknown []forwarding.ServerID
	unknownN := 0
	for _, ct := range cuts {
		left := "idle"
		switch {
		case ct.idle || ct.known && ct.conns == 0:
		case !ct.known:
			left = "unknown"
			unknownN++
			if !slices.Contains(unknown, ct.id) {
				unknown = append(unknown, ct.id)
			}
		default:
			left = "holder"
			byServer[ct.id] = append(byServer[ct.id], ct)
		}
		c.metrics.observeHistoryCut(name, left)
	}
	if unknownN > 0 {
		slices.Sort(unknown)
		in.log.Info("generation pushed entries out of bucket histories of servers whose connections there are not known (no recent agent report)",
			"generation", gen, "entries", unknownN, "k", k, "servers", unknown)
	}
	if len(byServer) == 0 {
		return nil
	}
	rec, err := readEvictions(ctx, c.st, in.k)
	if err != nil || rec == nil {
		rec = &HistoryEvictions{} // a damaged record is replaced
	}
	if rec.Servers == nil {
		rec.Servers = map[forwarding.ServerID]*EvictionTotals{}
	}
	rec.K = k
	at := c.now().UTC().Truncate(time.Second)
	avoiding := !c.opts.EvictOldest
	for _, id := range sortedKeys(byServer) {
		list := byServer[id]
		slices.SortFunc(list, func(a, b historyCut) int { return int(a.bucket) - int(b.bucket) })
		ev := EvictionEvent{At: at, Generation: gen, Server: id, Avoiding: avoiding}
		var parts []string
		for i, ct := range list {
			ev.Connections += uint64(ct.conns)
			if i < maxEventBuckets {
				ev.Buckets = append(ev.Buckets, BucketConns{Bucket: ct.bucket, Connections: ct.conns})
				parts = append(parts, fmt.Sprintf("bucket %d (%d connections)", ct.bucket, ct.conns))
			} else {
				ev.MoreBuckets++
			}
		}
		if ev.MoreBuckets > 0 {
			parts = append(parts, fmt.Sprintf("and %d more buckets", ev.MoreBuckets))
		}
		c.metrics.observeEviction(name, id, len(list), ev.Connections)
		why := "every other owner in those histories holds connections or is not known to be idle"
		if !avoiding {
			why = "the oldest owner leaves first (controller --history-evict-oldest)"
		}
		in.log.Warn("generation pushed a server out of bucket histories while it held connections there; those connections break",
			"generation", gen, "server", id, "buckets", len(list), "k", k, "connections", ev.Connections,
			"held", strings.Join(parts, ", "), "reason", why)
		t := rec.Servers[id]
		if t == nil {
			t = &EvictionTotals{}
			rec.Servers[id] = t
		}
		t.Buckets += uint64(len(list))
		t.Connections += ev.Connections
		rec.Recent = append(rec.Recent, ev)
	}
	if n := len(rec.Recent); n > maxRecentEvents {
		rec.Recent = slices.Clone(rec.Recent[n-maxRecentEvents:])
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return c.commit(ctx, in, store.Put(evictionsKey(in.k), b))
}

// showEvictions adds the K-limit record to v: warnings for the events of
// the last day.
func showEvictions(ctx context.Context, st store.Store, k ring.Keys, v *View, now time.Time) {
	rec, err := readEvictions(ctx, st, k)
	if err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("history evictions record unreadable: %v", err))
		return
	}
	if rec == nil {
		return
	}
	v.HistoryEvictions = rec
	var recent []EvictionEvent
	for _, ev := range rec.Recent {
		if now.Sub(ev.At) < evictionWarningAge {
			recent = append(recent, ev)
		}
	}
	for _, ev := range recent {
		b := make([]string, 0, len(ev.Buckets))
		for _, bc := range ev.Buckets {
			b = append(b, fmt.Sprintf("%d", bc.Bucket))
		}
		if ev.MoreBuckets > 0 {
			b = append(b, fmt.Sprintf("+%d", ev.MoreBuckets))
		}
		how := "the controller could not keep it: every other owner there holds connections or is not known idle"
		if !ev.Avoiding {
			how = "the controller evicts the oldest owner (--history-evict-oldest)"
		}
		v.Warnings = append(v.Warnings, fmt.Sprintf("HISTORY LIMIT: generation %d (%v ago) pushed server %d out of the history of %d buckets (max_chain %d) while it held %d connections there (buckets %s): they break; %s",
			ev.Generation, now.Sub(ev.At).Round(time.Second), ev.Server, len(ev.Buckets)+ev.MoreBuckets, rec.K, ev.Connections, strings.Join(b, " "), how))
	}
}

// evictionWarningAge is how long `ctl show` warns of an eviction.
const evictionWarningAge = 24 * time.Hour
