package mgmtapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/store"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Watch compares the views of the instances every WatchEvery and sends
// what changed. The first round reports every instance present (kind
// "instance") and its servers' state and health, so a watcher starts
// from a full picture.
func (s *Server) Watch(r *mgmtv1.WatchRequest, stream grpc.ServerStreamingServer[mgmtv1.WatchEvent]) error {
	ctx := stream.Context()
	var prev map[string]*instanceSnap
	t := time.NewTicker(s.WatchEvery)
	defer t.Stop()
	for {
		cur, err := s.snapshot(ctx, r.GetInstance())
		if err != nil {
			return toStatus(err)
		}
		for _, e := range diffSnaps(prev, cur) {
			e.Time = timestamppb.Now()
			if err := stream.Send(e); err != nil {
				return err
			}
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type serverSnap struct {
	health, state string
	drained       bool
}

type instanceSnap struct {
	strategy   string
	generation uint32
	servers    map[uint32]serverSnap
}

func (s *Server) snapshot(ctx context.Context, only string) (map[string]*instanceSnap, error) {
	names := []string{only}
	if only == "" {
		var err error
		if names, err = s.b.Instances(ctx); err != nil {
			return nil, err
		}
	}
	out := map[string]*instanceSnap{}
	for _, n := range names {
		v, err := s.b.Show(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile (or not created yet)
		}
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", n, err)
		}
		out[n] = snapOf(v)
	}
	return out, nil
}

func snapOf(v *controller.View) *instanceSnap {
	is := &instanceSnap{strategy: string(v.Instance.Strategy), generation: v.Generation, servers: map[uint32]serverSnap{}}
	for _, d := range v.DIPs {
		is.servers[uint32(d.ID)] = serverSnap{health: d.Health, state: string(d.State), drained: d.Drained}
	}
	return is
}

// diffSnaps lists the events from prev to cur (prev nil: the first round).
func diffSnaps(prev, cur map[string]*instanceSnap) []*mgmtv1.WatchEvent {
	var out []*mgmtv1.WatchEvent
	for _, name := range sortedKeys(prev) {
		if _, ok := cur[name]; !ok {
			out = append(out, &mgmtv1.WatchEvent{Kind: "deleted", Instance: name, Generation: prev[name].generation})
		}
	}
	for _, name := range sortedKeys(cur) {
		c := cur[name]
		p, ok := prev[name]
		ev := func(kind string, id uint32, old, new string) {
			out = append(out, &mgmtv1.WatchEvent{Kind: kind, Instance: name, ServerId: id, OldValue: old, NewValue: new, Generation: c.generation})
		}
		if !ok {
			ev("instance", 0, "", c.strategy)
			p = &instanceSnap{servers: map[uint32]serverSnap{}}
		} else if p.generation != c.generation {
			ev("generation", 0, strconv.FormatUint(uint64(p.generation), 10), strconv.FormatUint(uint64(c.generation), 10))
		}
		for _, id := range sortedKeys(p.servers) {
			if _, ok := c.servers[id]; !ok {
				ev("removed", id, p.servers[id].state, "")
			}
		}
		for _, id := range sortedKeys(c.servers) {
			now, was := c.servers[id], p.servers[id]
			if was.state != now.state {
				ev("state", id, was.state, now.state)
			}
			if was.health != now.health {
				ev("health", id, was.health, now.health)
			}
			if was.drained != now.drained {
				ev("drained", id, strconv.FormatBool(was.drained), strconv.FormatBool(now.drained))
			}
		}
	}
	return out
}
