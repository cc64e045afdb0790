package partition

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
	"github.com/beamer-lb/beamer/research/lab"
)

// Config shapes a run.
type Config struct {
	Beamer string // the beamer binary the daemons run
	Dir    string // run directory: logs, store data
	Store  string // "embedded" (a replicated etcd in the controllers) or "zookeeper" (a 3-server ensemble)
	Seed   uint64 // picks the faults' order, targets and times, and the workload
	// Faults is how many faults are injected, one after another, the
	// kinds cycling through Kinds in a seeded order (at least one of each
	// once Faults ≥ len(Kinds)).
	Faults int
	// Kinds, if set, are the kinds injected instead of every one (a
	// replay or a measurement of one kind: BEAMER_PARTITION_KINDS).
	Kinds []Kind
	// Gap and Hold bound the random pause before a fault and how long it
	// lasts; Settle is the pause after healing before the next one.
	Gap, Hold, Settle [2]time.Duration
	// LeaseHold bounds how long a paused or isolated leader stays so:
	// longer than the store's lease or session (10 s for etcd, the
	// session timeout for ZooKeeper), so that another controller is
	// elected while the old one still believes it leads, then comes back.
	LeaseHold [2]time.Duration
	// DiskHold, if set, bounds how long a disk stays failed: a member
	// meets the failure at its next write, within a second under the
	// workload, so CI holds it briefly.
	DiskHold [2]time.Duration
	// Bound is how long after the last heal every mux must run the
	// store's final table (the checker's convergence bound).
	Bound  time.Duration
	Logf   func(format string, args ...any)
	Budget time.Duration // the whole run's bound; 0: 15 minutes
}

// Result is what a run recorded and found.
type Result struct {
	History    history.History
	Violations []history.Violation
	Faults     []*Fault
	Figures    []Figure
	// Left is what the lab left behind after closing (namespaces,
	// processes, BPF programs): nothing, or the run leaks.
	Left []string
}

// CI is a run sized for CI: each fault kind once, seconds apart.
func CI(beamer, dir, store string, seed uint64) Config {
	return Config{Beamer: beamer, Dir: dir, Store: store, Seed: seed, Faults: len(Kinds),
		Gap: [2]time.Duration{500 * time.Millisecond, 2 * time.Second}, Hold: [2]time.Duration{3 * time.Second, 6 * time.Second},
		DiskHold: [2]time.Duration{time.Second, 2 * time.Second},
		Settle:   [2]time.Duration{3 * time.Second, 5 * time.Second}, LeaseHold: [2]time.Duration{12 * time.Second, 14 * time.Second},
		Bound: 30 * time.Second}
}

// kinds are the kinds the run injects (a copy).
func (c Config) kinds() []Kind {
	if len(c.Kinds) > 0 {
		return slices.Clone(c.Kinds)
	}
	return slices.Clone(Kinds)
}

func between(rng *rand.Rand, b [2]time.Duration) time.Duration {
	if b[1] <= b[0] {
		return b[0]
	}
	return b[0] + time.Duration(rng.Int64N(int64(b[1]-b[0])))
}

// Run builds the lab (three controller hosts, two muxes, three servers,
// two clients with long-lived connections through the VIP), runs the
// workload while injecting the faults, heals, and checks the history.
// An error is a rig failure (the lab did not come up); violations are in
// the result.
func Run(ctx context.Context, c Config) (res *Result, err error) {
	logf := c.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if c.Budget == 0 {
		c.Budget = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, c.Budget)
	defer cancel()
	rng := rand.New(rand.NewPCG(c.Seed, 0x6661756c74))
	const servers, muxes = 3, 2
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	l, err := lab.Start(ctx, lab.Options{Beamer: c.Beamer, Dir: c.Dir, Clients: 2, Muxes: muxes, Servers: servers,
		Buckets: 257, Window: 4 * time.Minute, FileSize: 32 << 10, Strategy: "beamer", Store: c.Store,
		Seed: int64(c.Seed), ControlHosts: 3, ControlHostDisks: slices.Contains(c.kinds(), DiskFailed), MuxArgs: []string{"--log-level", "debug", "--log-format", "json"}})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer func() {
		inv := l.Inventory()
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if res != nil {
			res.Left = inv.Remaining()
		}
	}()
	if err := l.CreateInstance(); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	weights := map[int]uint32{}
	for i := range servers {
		if err := l.AddServer(i); err != nil {
			return nil, fmt.Errorf("server %d: %w", i, err)
		}
		weights[i] = 1
	}
	for i := range muxes {
		if err := l.StartMux(ctx, i); err != nil {
			return nil, fmt.Errorf("mux %d: %w", i, err)
		}
	}
	initial, err := readState(l)
	if err != nil {
		return nil, err
	}
	logf("lab up (%s store): controller %s, %d@%d", c.Store, initial.Controller, initial.Generation, initial.Incarnation)
	load := l.StartLoad(lab.LoadOptions{PerClient: 2, FileSize: 32 << 10, Persistent: true, Stall: 15 * time.Second,
		Seed: int64(c.Seed), Idle: lab.IdleLoad{PerClient: 6, Every: time.Second}})
	loadStopped := false
	defer func() {
		if !loadStopped {
			load.Abort()
		}
	}()
	time.Sleep(2 * time.Second) // every connection open before the first fault

	wctx, stopWork := context.WithCancel(ctx)
	w := newWorkload(l, c.Seed, servers, weights)
	worked := make(chan struct{})
	go func() { defer close(worked); w.run(wctx) }()
	defer func() { stopWork(); <-worked }()

	kinds := c.kinds()
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	res = &Result{}
	deadline, _ := ctx.Deadline()
	for n := 0; n < c.Faults && ctx.Err() == nil; n++ {
		if time.Until(deadline) < c.Bound+c.Hold[1]+c.Settle[1]+2*time.Minute {
			logf("budget: stopping after %d faults, keeping time to heal, settle and check", n)
			break
		}
		k := kinds[n%len(kinds)]
		time.Sleep(between(rng, c.Gap))
		leader := -1
		if s, err := readState(l); err == nil {
			leader = hostIndex(s.Controller)
		}
		f, err := inject(l, k, leader, rng)
		if f != nil {
			res.Faults = append(res.Faults, f)
		}
		if err != nil {
			if f != nil && f.heal != nil {
				f.Heal()
			}
			return res, fmt.Errorf("injecting %s: %w", k, err)
		}
		hold := c.Hold
		if (k == LeaderPaused || k == LeaderIsolated) && c.LeaseHold[1] > 0 {
			hold = c.LeaseHold
		}
		if k == DiskFailed && c.DiskHold[1] > 0 {
			hold = c.DiskHold
		}
		time.Sleep(between(rng, hold))
		if err := f.Heal(); err != nil {
			return res, fmt.Errorf("healing %s: %w", f, err)
		}
		logf("fault %d: %s", n+1, f)
		time.Sleep(between(rng, c.Settle))
	}
	healed := time.Now()
	if len(res.Faults) > 0 {
		healed = res.Faults[len(res.Faults)-1].Healed
	}
	stopWork()
	<-worked

	// The store's final state, once a controller answers and every mux
	// has caught up with it (or the bound passed: the checker says so).
	final, err := settle(ctx, l, muxes, healed.Add(c.Bound))
	if err != nil {
		return res, err
	}
	lr := load.Stop(20 * time.Second)
	loadStopped = true

	h := history.History{Requests: w.history(), Bound: c.Bound, Broken: lr.Broken, Connections: lr.Connections,
		Final: history.Final{HealedAt: healed, Instance: lab.Instance, Incarnation: final.Incarnation, Generation: final.Generation,
			State: final.State, Initial: initial.State}}
	for i := range muxes {
		h.Muxes = append(h.Muxes, fmt.Sprintf("mux%d", i))
		path, err := l.MuxLog(i)
		if err != nil {
			return res, err
		}
		as, err := readApplies(fmt.Sprintf("mux%d", i), "1", path)
		if err != nil {
			return res, err
		}
		h.Applies = append(h.Applies, as...)
	}
	// The store's digest is the one the muxes applied for its final pair
	// (unique-table then holds every mux to that one table); the rig does
	// not decode the ring from the store itself.
	for _, a := range h.Applies {
		if a.Incarnation == final.Incarnation && a.Generation == final.Generation {
			h.Final.Digest = a.Digest
			break
		}
	}
	res.History = h
	res.Violations = history.Check(h)
	res.Figures = figures(res.Faults, h.Applies, h.Requests)
	for _, b := range lr.BrokenConns {
		logf("broken: %+v", b)
	}
	return res, nil
}

// settle waits (until deadline) for a controller to answer and every mux
// to log the store's latest pair, and returns the store's state then.
func settle(ctx context.Context, l *lab.Lab, muxes int, deadline time.Time) (snapshot, error) {
	var last snapshot
	var lastErr error
	for {
		s, err := readState(l)
		if err == nil {
			last, lastErr = s, nil
			caught := 0
			for i := range muxes {
				path, _ := l.MuxLog(i)
				as, _ := readApplies("", "", path)
				if len(as) > 0 && as[len(as)-1].Incarnation == s.Incarnation && as[len(as)-1].Generation == s.Generation {
					caught++
				}
			}
			if caught == muxes {
				return s, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if lastErr != nil && last.State == nil {
				return last, fmt.Errorf("no controller answered after healing: %w", lastErr)
			}
			return last, nil // the checker reports the muxes that did not converge
		}
		time.Sleep(500 * time.Millisecond)
	}
}
