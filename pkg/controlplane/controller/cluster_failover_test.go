package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// Issue 26 item 2: a controller on every member of a replicated store,
// one elected, the others standing by. These tests run three controllers
// (Run, as `beamer controller` does), each reaching the store through its
// own client that lists every member with its own first, on a 3-member
// embedded etcd cluster with mutual TLS and on a 3-member ZooKeeper
// ensemble. Each controller's client goes through a FreezeProxy per
// member, so that a controller can be made silent towards the store as a
// killed or paused (SIGSTOP) process is.

// failoverBound is how long a failover may take in these tests: the
// lease or session (3 s here) must expire, a standby be elected and
// recover; generous for CI machines running other tests beside.
const failoverBound = 30 * time.Second

// replicated is a 3-member store started by a test.
type replicated struct {
	addrs []string                                       // the members' client addresses
	open  func(t *testing.T, addrs []string) store.Store // a client of the members at addrs
	stop  func(i int)                                    // kill member i
}

// ordered is addrs with member first at the head, as a controller on that
// member's host lists them.
func ordered(addrs []string, first int) []string {
	out := []string{addrs[first]}
	for i, a := range addrs {
		if i != first {
			out = append(out, a)
		}
	}
	return out
}

// clusterBackends runs f on a 3-member embedded etcd cluster (peer and
// client mutual TLS) and on a 3-member ZooKeeper ensemble.
func clusterBackends(t *testing.T, f func(t *testing.T, r replicated)) {
	t.Run("etcd", func(t *testing.T) { f(t, etcdCluster(t)) })
	t.Run("zookeeper", func(t *testing.T) {
		ss := storetest.StartZooKeeperEnsemble(t, 3)
		var addrs []string
		for _, s := range ss {
			addrs = append(addrs, s.Addr)
		}
		f(t, replicated{addrs: addrs, stop: func(i int) { ss[i].Stop() }, open: func(t *testing.T, addrs []string) store.Store {
			s, err := zkstore.Open(context.Background(), zkstore.Config{Servers: addrs, SessionTimeout: 3 * time.Second, DialTimeout: 40 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}})
	})
}

// etcdCluster is a 3-member embedded etcd cluster (peer and client
// mutual TLS), stopped when the test ends.
func etcdCluster(t *testing.T) replicated {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	ms := storetest.StartCluster(t, c, "a", "b", "c")
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.ClientAddr)
	}
	return replicated{addrs: addrs, stop: func(i int) { ms[i].Stop() }, open: func(t *testing.T, addrs []string) store.Store {
		var eps []string
		for _, a := range addrs {
			eps = append(eps, "https://"+a)
		}
		s, err := etcdstore.Open(storetest.Context(t), etcdstore.Config{Endpoints: eps, TLS: c.ClientTLS(t),
			DialTimeout: 10 * time.Second, LeaseTTL: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
}

// memberCtl is one controller on member i.
type memberCtl struct {
	name    string
	member  int
	proxies []*storetest.FreezeProxy // one per member, its own first
	st      *holdingStore
	book    *logBook
	cancel  context.CancelFunc
	done    chan struct{}
}

// freeze makes the controller silent towards every member (and them
// towards it): no request, no keep-alive, no session ping goes through.
func (m *memberCtl) freeze() {
	for _, p := range m.proxies {
		p.Freeze()
	}
}

func (m *memberCtl) thaw() {
	for _, p := range m.proxies {
		p.Thaw()
	}
}

// crash kills the controller as SIGKILL would: silent first (so it
// cannot resign), then its loop ends.
func (m *memberCtl) crash() {
	m.freeze()
	m.cancel()
}

// holdingStore is a controller's store client that can hold the
// controller's next ring publication before sending it, as a process
// stopped (SIGSTOP) just before a write would.
type holdingStore struct {
	store.Store
	latest string // the latest-gen key of the instance

	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed once a publication is held
	release chan struct{} // closed to send it
	result  chan error    // the held publication's outcome
}

func (s *holdingStore) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.held, s.release, s.result = true, make(chan struct{}), make(chan struct{}), make(chan error, 1)
}

func (s *holdingStore) Commit(ctx context.Context, ops ...store.Op) error {
	s.mu.Lock()
	hold := s.armed && slices.ContainsFunc(ops, func(op store.Op) bool { return op.Kind == store.OpPut && op.Key == s.latest })
	if hold {
		s.armed = false
	}
	held, release, result := s.held, s.release, s.result
	s.mu.Unlock()
	if !hold {
		return s.Store.Commit(ctx, ops...)
	}
	close(held)
	<-release
	err := s.Store.Commit(ctx, ops...)
	result <- err
	return err
}

// clusterRig is three controllers on a replicated store and a muxless
// follower reading the ring throughout.
type clusterRig struct {
	*damageHarness
	r    replicated
	ctls []*memberCtl
	// options, if set, are controller i's options (its clock); the
	// logger is the rig's.
	options func(i int) Options
}

func newClusterRig(t *testing.T, r replicated) *clusterRig { return newClusterRigWith(t, r, nil) }

func newClusterRigWith(t *testing.T, r replicated, options func(i int) Options) *clusterRig {
	root := newRoot()
	h := &damageHarness{t: t, ctx: storetest.Context(t), st: r.open(t, r.addrs), root: root, k: ring.InstanceKeys(root, "web"),
		forks: &forkBook{seen: map[ring.Pair]uint64{}}}
	cr := &clusterRig{damageHarness: h, r: r, options: options}
	for i := range r.addrs {
		cr.ctls = append(cr.ctls, cr.startCtl(i))
	}
	return cr
}

func (cr *clusterRig) startCtl(i int) *memberCtl {
	t := cr.t
	m := &memberCtl{name: fmt.Sprintf("ctl-%c", 'a'+i), member: i, done: make(chan struct{})}
	var via []string
	for _, a := range ordered(cr.r.addrs, i) {
		p := storetest.StartFreezeProxy(t, a)
		m.proxies = append(m.proxies, p)
		via = append(via, p.Addr)
	}
	m.st = &holdingStore{Store: cr.r.open(t, via), latest: cr.k.LatestGen()}
	book, logger := newLogBook()
	m.book = book
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	var opts Options
	if cr.options != nil {
		opts = cr.options(i)
	}
	opts.Logger = logger
	go func() {
		Run(ctx, m.st, cr.root, RunOptions{Options: opts, Identity: m.name, ReconcileEvery: time.Hour, VerifyEvery: 200 * time.Millisecond})
		close(m.done)
	}()
	t.Cleanup(func() { m.thaw(); cancel(); <-m.done })
	return m
}

// leader waits until a controller other than not is elected, as st
// (nil: the test's client) reads the election, and returns it.
func (cr *clusterRig) leader(not string, st store.Store) *memberCtl {
	cr.t.Helper()
	if st == nil {
		st = cr.st
	}
	deadline := time.Now().Add(failoverBound)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(cr.ctx, time.Second)
		name, err := st.Leader(ctx, ElectionKey(cr.root))
		cancel()
		if err != nil || name == not {
			continue
		}
		for _, m := range cr.ctls {
			if m.name == name {
				return m
			}
		}
		cr.t.Fatalf("leader %q is none of the controllers", name)
	}
	cr.t.Fatalf("no controller but %q elected within %v", not, failoverBound)
	return nil
}

// leading says, for each controller, whether it leads by its own log:
// elected more often than it stepped down.
func (cr *clusterRig) leading() []int {
	var n []int
	for _, m := range cr.ctls {
		n = append(n, len(m.book.find("elected controller"))-len(m.book.find("no longer leading")))
	}
	return n
}

// populate creates the instance and its servers through the leader.
func (cr *clusterRig) populate() {
	if err := cr.submit(Request{Op: OpCreateInstance, Config: webInstance(600)}); err != nil {
		cr.t.Fatal(err)
	}
	for id := forwarding.ServerID(1025); id < 1028; id++ {
		cr.addDIP(id)
	}
	cr.mux, cr.fol = cr.startMux()
	cr.converged("before the failover")
}

// maxIncarnation is the highest incarnation the mux model installed.
func (cr *clusterRig) maxIncarnation() uint32 {
	cr.mux.mu.Lock()
	defer cr.mux.mu.Unlock()
	var inc uint32
	for _, p := range cr.mux.pairs {
		inc = max(inc, p.Incarnation)
	}
	return inc
}

// waitIncarnationAbove waits until the mux model installs a pair of an
// incarnation above inc and returns when it saw it.
func (cr *clusterRig) waitIncarnationAbove(inc uint32, since time.Time) time.Duration {
	cr.t.Helper()
	for deadline := since.Add(failoverBound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cr.maxIncarnation() > inc {
			return time.Since(since)
		}
	}
	var logs []string
	for _, m := range cr.ctls {
		logs = append(logs, m.name+":\n"+m.book.String())
	}
	cr.t.Fatalf("no publication of an incarnation above %d within %v of the leader's loss; logs:\n%s", inc, failoverBound, strings.Join(logs, "\n"))
	return 0
}

// checkForward: the mux model's pairs never went back (the model fails
// on that and on forks itself), and every pair after the old leader's
// last, last, is of an incarnation above every one seen before.
func (cr *clusterRig) checkForward(last ring.Pair, seenBefore uint32) {
	cr.t.Helper()
	cr.mux.mu.Lock()
	defer cr.mux.mu.Unlock()
	for _, f := range cr.mux.faults {
		cr.t.Error(f)
	}
	for _, p := range cr.mux.pairs {
		if last.Less(p) && p.Incarnation <= seenBefore {
			cr.t.Errorf("pair %v after the old leader's last %v is not of a fresh incarnation (above %d)", p, last, seenBefore)
		}
	}
}

// TestClusterFailover: three controllers on three members; exactly one
// leads. The leader's controller is killed (silent, then stopped, so its
// lease or session has to expire), and in the second case its member too:
// another controller is elected within the bound and publishes under an
// incarnation above every one seen, a request is served under it, and the
// follower never went back nor saw one pair with two tables.
func TestClusterFailover(t *testing.T) {
	clusterBackends(t, func(t *testing.T, r replicated) {
		// Both cases on the same store, each under its own root; the
		// member is killed in the last.
		for _, killMember := range []bool{false, true} {
			name := "controller_killed"
			if killMember {
				name = "controller_and_member_killed"
			}
			t.Run(name, func(t *testing.T) {
				cr := newClusterRig(t, r)
				old := cr.leader("", nil)
				cr.populate()
				if n := cr.leading(); sum(n) != 1 || n[old.member] != 1 {
					t.Fatalf("controllers leading by their logs %v: want exactly one, %s", n, old.name)
				}
				before := cr.pair()
				seen := cr.maxIncarnation()
				killed := time.Now()
				// The election as a client of a member that stays sees it.
				survivor := cr.r.open(t, ordered(cr.r.addrs, (old.member+1)%len(cr.r.addrs)))
				old.crash()
				if killMember {
					cr.r.stop(old.member)
				}
				elected := cr.leader(old.name, survivor)
				electedAfter := time.Since(killed)
				took := cr.waitIncarnationAbove(seen, killed)
				cr.addDIP(1030)
				tab := cr.converged("after the failover")
				if tab.Incarnation <= seen || tab.Servers[1030].State != forwarding.Active {
					t.Fatalf("after the failover the store runs %d@%d (servers %v); want an incarnation above %d with server 1030", tab.Generation, tab.Incarnation, tab.Servers, seen)
				}
				cr.checkForward(before, seen)
				t.Logf("FAILOVER %s/%s: %s lost, %s elected after %v, first publication of incarnation %d (was %d) seen by the follower after %v",
					strings.Split(t.Name(), "/")[1], name, old.name, elected.name, electedAfter.Round(time.Millisecond), tab.Incarnation, seen, took.Round(time.Millisecond))
			})
		}
	})
}

func sum(n []int) int {
	s := 0
	for _, x := range n {
		s += x
	}
	return s
}

// TestClusterPausedLeaderFenced: the leader is paused (SIGSTOP-like) just
// before it publishes a generation: it holds the write, and says nothing
// to the store, so its lease or session expires. Another controller is
// elected and publishes under a fresh incarnation. Then the old leader
// wakes up and sends the write it held: the store refuses it (the fence,
// ErrConflict), nothing of it reaches the ring, and the follower never
// went back nor saw a pair with two tables; the woken controller stands by.
func TestClusterPausedLeaderFenced(t *testing.T) {
	clusterBackends(t, func(t *testing.T, r replicated) {
		cr := newClusterRig(t, r)
		old := cr.leader("", nil)
		cr.populate()
		before := cr.pair()
		seen := cr.maxIncarnation()
		old.st.arm()
		submitted := make(chan error, 1)
		go func() {
			submitted <- Submit(cr.ctx, cr.st, cr.root, Request{Op: OpAddDIP, Instance: "web", ID: 1031, Addr: dipAddr(1031), Weight: 1}, 40*time.Second)
		}()
		select {
		case <-old.st.held:
		case <-time.After(20 * time.Second):
			t.Fatalf("the leader never came to publish the request; log:\n%s", old.book)
		}
		paused := time.Now()
		old.freeze()
		elected := cr.leader(old.name, nil)
		electedAfter := time.Since(paused)
		took := cr.waitIncarnationAbove(seen, paused)
		// The new leader serves the request the old one was about to
		// publish, and another one.
		if err := <-submitted; err != nil {
			t.Fatalf("the request the paused leader held, after the failover: %v", err)
		}
		cr.addDIP(1032)
		newer := cr.converged("new leader")
		// Wake the old leader up: its held write goes out now.
		old.thaw()
		close(old.st.release)
		select {
		case err := <-old.st.result:
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("the woken leader's held publication: %v, want ErrConflict (fenced)", err)
			}
			t.Logf("the woken leader's publication: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("the woken leader's held publication never returned")
		}
		time.Sleep(500 * time.Millisecond) // what the woken controller might write would land by now
		after := cr.converged("after the old leader woke up")
		if after.Incarnation != newer.Incarnation || after.Generation != newer.Generation {
			t.Fatalf("the store moved from %d@%d to %d@%d after the old leader woke up", newer.Generation, newer.Incarnation, after.Generation, after.Incarnation)
		}
		if name, err := cr.st.Leader(cr.ctx, ElectionKey(cr.root)); err != nil || name != elected.name {
			t.Fatalf("leader after the old one woke up: %q, %v; want %s", name, err, elected.name)
		}
		for _, id := range []forwarding.ServerID{1031, 1032} {
			if after.Servers[id].State != forwarding.Active {
				t.Errorf("server %d not active after the failover: %v", id, after.Servers)
			}
		}
		cr.checkForward(before, seen)
		if lines := old.book.find("no longer leading"); len(lines) == 0 {
			t.Errorf("the woken controller did not step down; log:\n%s", old.book)
		}
		t.Logf("FAILOVER %s/paused: %s paused, %s elected after %v, first publication of incarnation %d (was %d) seen by the follower after %v",
			strings.Split(t.Name(), "/")[1], old.name, elected.name, electedAfter.Round(time.Millisecond), newer.Incarnation, seen, took.Round(time.Millisecond))
	})
}
