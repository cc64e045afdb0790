// Package scalebench runs Beamer's control plane at the paper's scale end
// to end (§6: 64K DIPs, 6.4M buckets, 100 muxes): a real store server
// (etcd or ZooKeeper), a real controller process, requests submitted the
// way `beamer ctl` submits them, and many muxes' ring followers (the code
// pkg/node/muxd runs) applying to in-memory data planes. It reports how long an
// add-dip or remove-dip takes to reach every mux, what each mux reads, a
// mux's cold start, and the controller's CPU and memory — and checks that
// every mux ends with the same table as the store.
package scalebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
)

// Options say what to run.
type Options struct {
	Store     string // "etcd" or "zookeeper"
	Followers int    // muxes following the ring
	DIPs      int    // DIPs of the instance at its largest
	Buckets   int    // bucket count B (paper: 100 per DIP)
	// Batch DIPs are added in one request, and later removed in one
	// (paper: 32K); the instance starts with DIPs-Batch DIPs.
	Batch int
	// Ops single-DIP operations are timed: add-dip and remove-dip of a
	// fresh DIP, alternately.
	Ops int
	// ColdStarts fresh muxes are started one after the other at the end,
	// each timed.
	ColdStarts int
	// XDPMuxes real muxes (pkg/node/muxd, XDP program on a veth in a namespace
	// of its own) follow the ring beside the followers (needs root).
	XDPMuxes int
	// Controller returns the command that runs the controller on the store
	// URL (`beamer controller …`); the benchmark starts and kills it, and
	// reads its CPU and memory from /proc.
	Controller func(storeURL string) *exec.Cmd
	// MemoryBudget bounds the followers' estimated memory (0: 70% of what
	// the kernel says is available); a run that would exceed it is refused
	// before it starts.
	MemoryBudget int64
	// IdleWindow is how long the controller's idle CPU is measured
	// (default 12 s, past one 10 s ring verification).
	IdleWindow time.Duration
	// Timeout bounds each request and each wait for the muxes.
	Timeout time.Duration
	// Progress receives one line per phase (nil: silent).
	Progress io.Writer
}

// Op is the measurement of one operation.
type Op struct {
	Kind          string        `json:"kind"` // add-dip, remove-dip
	DIPs          int           `json:"dips"` // DIPs in the request
	First         time.Duration `json:"first_mux_ns"`
	All           time.Duration `json:"all_muxes_ns"`
	Ctl           time.Duration `json:"ctl_answer_ns"` // until the request was marked done
	BytesPerMux   int64         `json:"bytes_per_mux"`
	ControllerCPU time.Duration `json:"controller_cpu_ns"`
	// MuxCPU is the CPU one mux spent on the operation (the benchmark
	// process's CPU over the operation, divided by the followers): what
	// a mux on a core of its own would take, whatever the sharing here.
	MuxCPU time.Duration `json:"mux_cpu_ns"`
	// XDPAll: until every real XDP mux ran the generation.
	XDPAll      time.Duration `json:"xdp_all_ns,omitempty"`
	Generations int           `json:"generations"`
}

// Result is what Run measured.
type Result struct {
	Options           Options         `json:"-"`
	Store             string          `json:"store"`
	Followers         int             `json:"followers"`
	DIPs              int             `json:"dips"`
	Buckets           int             `json:"buckets"`
	Seed              Op              `json:"seed"`
	ColdStart         []time.Duration `json:"cold_start_ns"`    // the followers' first loads (2 at a time)
	ColdBytes         int64           `json:"cold_start_bytes"` // what one of them read
	FreshStart        []time.Duration `json:"fresh_start_ns"`   // ColdStarts fresh muxes at the end, alone
	FreshBytes        int64           `json:"fresh_start_bytes"`
	BatchAdd          Op              `json:"batch_add"`
	BatchRemove       Op              `json:"batch_remove"`
	Single            []Op            `json:"single"`
	ControllerRSS     int64           `json:"controller_rss_bytes"`
	ControllerPeak    int64           `json:"controller_peak_rss_bytes"`
	ControllerIdleCPU float64         `json:"controller_idle_cpu"` // cores used while nothing is asked
	StoreRSS          int64           `json:"store_rss_bytes"`
	FollowerErrors    int64           `json:"follower_errors"`
	XDPMuxes          int             `json:"xdp_muxes"`
	XDPCold           []time.Duration `json:"xdp_cold_start_ns"`
	XDPColdBytes      int64           `json:"xdp_cold_start_bytes"`
	// Load is the machine's 1-minute load average sampled at every
	// operation: min and max over the run (2 cores, shared).
	LoadMin float64   `json:"load_min"`
	LoadMax float64   `json:"load_max"`
	Final   ring.Pair `json:"-"`
}

// perFollowerBytes estimates one follower's memory at B buckets: the ring
// follower's model of the table (forwarding.Bucket, 20 bytes), the
// plane's words (8), and the transient decode of a blob during its load.
func perFollowerBytes(buckets int) int64 { return int64(buckets)*(20+8) + 4<<20 }

func (o *Options) check() error {
	switch {
	case o.Followers < 1:
		return errors.New("need at least one follower")
	case o.DIPs < 2 || o.DIPs > int(forwarding.MaxServerID-forwarding.MinServerID)+1:
		return fmt.Errorf("--dips %d: an instance has at most %d DIPs (server ids %d–%d)", o.DIPs,
			int(forwarding.MaxServerID-forwarding.MinServerID)+1, forwarding.MinServerID, forwarding.MaxServerID)
	case o.Batch < 1 || o.Batch > o.DIPs:
		return fmt.Errorf("--batch %d must be in 1–%d", o.Batch, o.DIPs)
	case o.Buckets <= o.DIPs:
		return fmt.Errorf("--buckets %d must exceed --dips %d", o.Buckets, o.DIPs)
	case o.Ops > 0 && o.DIPs+1 > int(forwarding.MaxServerID-forwarding.MinServerID)+1:
		return errors.New("no spare server id for the single operations: lower --dips")
	case o.Controller == nil:
		return errors.New("no controller command")
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.IdleWindow == 0 {
		o.IdleWindow = 12 * time.Second
	}
	need := int64(o.Followers+1) * perFollowerBytes(o.Buckets)
	budget := o.MemoryBudget
	if budget == 0 {
		avail, err := memAvailable()
		if err != nil {
			return err
		}
		budget = avail * 7 / 10
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The Go heap may grow to twice what is live between collections;
		// followers decoding a 32K-DIP delta at once would then take what
		// other work on the machine needs.
		debug.SetMemoryLimit(budget)
	}
	if need > budget {
		return fmt.Errorf("%d followers of %d buckets need about %d MB (%d MB each: the ring follower's table and the data plane's words), over the budget of %d MB: use fewer followers or buckets, or raise --memory-budget",
			o.Followers, o.Buckets, need>>20, perFollowerBytes(o.Buckets)>>20, budget>>20)
	}
	return nil
}

func (o *Options) logf(format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", a...)
	}
}

// instanceName is the benchmark's instance.
const instanceName = "bench"

func dipOf(i int) controller.NewDIP {
	a := netip.MustParseAddr("198.18.0.1").As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) + uint32(i)
	return controller.NewDIP{ID: forwarding.ServerID(int(forwarding.MinServerID) + i),
		Addr: netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), Weight: 1}
}

// Run runs the benchmark.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	res := &Result{Options: o, Store: o.Store, Followers: o.Followers, DIPs: o.DIPs, Buckets: o.Buckets}
	var srv *server
	open := func(ctx context.Context) (store.Store, error) {
		st, _, err := storeurl.Open(ctx, srv.URL)
		return st, err
	}
	var st store.Store
	var err error
	// A store server that listens but gives no session is started afresh
	// once (seen with ZooKeeper in full CI runs and in perf-doc.sh, where
	// the readiness check took "imok" for serving: zkServing); its state
	// and its log's tail go into the error.
	for attempt := 1; ; attempt++ {
		o.logf("starting %s", o.Store)
		if srv, err = startStore(o.Store); err != nil {
			return nil, err
		}
		if st, err = open(ctx); err == nil {
			break
		}
		state := srv.state()
		b, _ := os.ReadFile(filepath.Join(srv.dir, "server.log"))
		srv.stop()
		err = fmt.Errorf("%w (server state: %q; server log: %s)", err, state, tail(b))
		if attempt == 2 || ctx.Err() != nil {
			return nil, err
		}
		o.logf("%s gave no session: %v; starting a fresh server", o.Store, err)
	}
	defer srv.stop()
	defer st.Close()

	cmd := o.Controller(srv.URL)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the controller: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	pid := cmd.Process.Pid
	if err := waitLeader(ctx, st, exited); err != nil {
		return nil, err
	}
	b := &bench{o: o, st: st, pid: pid, k: ring.InstanceKeys("/beamer", instanceName)}
	cfg := &forwarding.Instance{Name: instanceName, Strategy: forwarding.StrategyBeamer,
		VIPs: []netip.Addr{netip.MustParseAddr("198.19.0.1")}, PortLow: 80, PortHigh: 80,
		Buckets: uint32(o.Buckets), ChainWindow: forwarding.DefaultChainWindow,
		Health: &forwarding.HealthCheck{Kind: forwarding.HealthNone}}
	if err := b.submit(ctx, controller.Request{Op: controller.OpCreateInstance, Config: cfg}); err != nil {
		return nil, fmt.Errorf("create the instance: %w", err)
	}
	seed := o.DIPs - o.Batch
	if seed > 0 {
		o.logf("seeding %d DIPs in one request", seed)
		if res.Seed, err = b.op(ctx, "add-dip", addDIPs(0, seed)); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}

	fctx, stopFollowers := context.WithCancel(ctx)
	defer stopFollowers()
	o.logf("starting %d followers (cold starts two at a time)", o.Followers)
	if err := b.startFollowers(fctx, open, res); err != nil {
		return nil, err
	}
	if o.XDPMuxes > 0 {
		o.logf("starting %d XDP muxes (one after the other)", o.XDPMuxes)
		x, err := startXDPMuxes(fctx, o.XDPMuxes, open, &o)
		if err != nil {
			return nil, err
		}
		defer x.close()
		b.xdp = x.muxes
		res.XDPMuxes = len(x.muxes)
		for _, m := range x.muxes {
			res.XDPCold = append(res.XDPCold, m.cold)
			res.XDPColdBytes = m.st.bytes.Load()
		}
	}
	// Over more than the controller's 10 s ring verification (a full read of
	// the ring, as a mux cold-starts): its idle work includes one.
	res.ControllerIdleCPU = b.idleCPU(ctx, o.IdleWindow)

	o.logf("adding %d DIPs in one request", o.Batch)
	if res.BatchAdd, err = b.op(ctx, "add-dip", addDIPs(seed, o.DIPs)); err != nil {
		return nil, fmt.Errorf("batch add: %w", err)
	}
	next := o.DIPs
	for i := range o.Ops {
		var r controller.Request
		if i%2 == 0 {
			r = addDIPs(next, next+1)
		} else {
			r = controller.Request{Op: controller.OpRemoveDIP, Instance: instanceName, ID: dipOf(next).ID}
			next++
			if next+1 > int(forwarding.MaxServerID-forwarding.MinServerID)+1 {
				next = o.DIPs // ids retired long enough ago are reused with the same address
			}
		}
		op, err := b.op(ctx, r.Op, r)
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s): %w", i+1, r.Op, err)
		}
		res.Single = append(res.Single, op)
		if (i+1)%10 == 0 {
			o.logf("  %d/%d single operations", i+1, o.Ops)
		}
	}
	o.logf("%d fresh cold starts", o.ColdStarts)
	for range o.ColdStarts {
		cctx, stop := context.WithCancel(ctx)
		fl, err := startFollower(cctx, open, b.k, func(error) {})
		stop()
		if err != nil {
			return nil, fmt.Errorf("cold start: %w", err)
		}
		res.FreshStart = append(res.FreshStart, fl.cold)
		res.FreshBytes = int64(fl.load.BlobBytes + fl.load.DeltaBytes)
	}
	var ids []forwarding.ServerID
	for i := seed; i < o.DIPs; i++ {
		ids = append(ids, dipOf(i).ID)
	}
	o.logf("removing %d DIPs in one request", len(ids))
	if res.BatchRemove, err = b.op(ctx, "remove-dip", controller.Request{Op: controller.OpRemoveDIP, Instance: instanceName, IDs: ids}); err != nil {
		return nil, fmt.Errorf("batch remove: %w", err)
	}
	res.LoadMin, res.LoadMax = b.loadMin, b.loadMax
	res.ControllerRSS, res.ControllerPeak, _ = procMem(pid)
	res.StoreRSS, _, _ = procMem(srv.pid())
	for _, f := range b.followers {
		res.FollowerErrors += f.errs.Load()
	}
	o.logf("checking every follower's table against the store")
	res.Final, err = b.verify(ctx)
	return res, err
}

func addDIPs(from, to int) controller.Request {
	r := controller.Request{Op: controller.OpAddDIP, Instance: instanceName}
	for i := from; i < to; i++ {
		r.DIPs = append(r.DIPs, dipOf(i))
	}
	return r
}

// waitLeader waits until the controller is elected.
func waitLeader(ctx context.Context, st store.Store, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := st.Leader(ctx, controller.ElectionKey("/beamer")); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the controller exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("the controller was not elected within 60 s")
		}
	}
}

type bench struct {
	o         Options
	st        store.Store
	pid       int
	k         ring.Keys
	followers []*follower
	errMu     sync.Mutex
	errCount  int
	xdp       []*xdpMux
	loadMin   float64
	loadMax   float64
}

func (b *bench) submit(ctx context.Context, r controller.Request) error {
	return controller.Submit(ctx, b.st, "/beamer", r, b.o.Timeout)
}

func (b *bench) latest(ctx context.Context) (ring.Pair, error) {
	it, err := b.st.Get(ctx, b.k.LatestGen())
	if err != nil {
		return ring.Pair{}, err
	}
	return ring.ParsePointer(it.Value)
}

func (b *bench) bytesRead() int64 {
	var n int64
	for _, f := range b.followers {
		n += f.st.bytes.Load()
	}
	return n
}

// op submits r as ctl does and waits until every follower runs the
// generation it produced.
func (b *bench) op(ctx context.Context, kind string, r controller.Request) (Op, error) {
	op := Op{Kind: kind, DIPs: max(len(r.DIPs), len(r.IDs), 1)}
	before, err := b.latest(ctx)
	if err != nil {
		return op, err
	}
	cpu0, _ := procCPU(b.pid)
	self0, _ := procCPU(os.Getpid())
	bytes0 := b.bytesRead()
	t0 := time.Now()
	if err := b.submit(ctx, r); err != nil {
		return op, err
	}
	op.Ctl = time.Since(t0)
	after, err := b.latest(ctx)
	if err != nil {
		return op, err
	}
	op.Generations = int(after.Generation) - int(before.Generation)
	deadline := time.Now().Add(b.o.Timeout)
	for _, f := range b.followers {
		for {
			at, ok := f.plane.reached(after)
			if ok {
				d := at.Sub(t0)
				if op.First == 0 || d < op.First {
					op.First = d
				}
				op.All = max(op.All, d)
				break
			}
			if time.Now().After(deadline) {
				return op, fmt.Errorf("a follower did not reach %v within %v (it runs %v; last error: %v)", after, b.o.Timeout, f.f.Status().Generation, f.f.Status().LastError)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	for _, m := range b.xdp {
		for {
			if at, ok := m.reached(after); ok {
				op.XDPAll = max(op.XDPAll, at.Sub(t0))
				break
			}
			if time.Now().After(deadline) {
				return op, fmt.Errorf("an XDP mux did not reach %v within %v", after, b.o.Timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	cpu1, _ := procCPU(b.pid)
	self1, _ := procCPU(os.Getpid())
	op.ControllerCPU = cpu1 - cpu0
	if len(b.followers) > 0 {
		op.MuxCPU = (self1 - self0) / time.Duration(len(b.followers))
	}
	b.sampleLoad()
	if len(b.followers) > 0 {
		op.BytesPerMux = (b.bytesRead() - bytes0) / int64(len(b.followers))
	}
	return op, nil
}

// startFollowers cold-starts the followers two at a time (the machine's
// cores), timing each.
func (b *bench) startFollowers(ctx context.Context, open func(context.Context) (store.Store, error), res *Result) error {
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for range b.o.Followers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fl, err := startFollower(ctx, open, b.k, b.noteErr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			b.followers = append(b.followers, fl)
			res.ColdStart = append(res.ColdStart, fl.cold)
			res.ColdBytes = int64(fl.load.BlobBytes + fl.load.DeltaBytes)
		}()
	}
	wg.Wait()
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (b *bench) sampleLoad() {
	l := loadAverage()
	if b.loadMin == 0 || l < b.loadMin {
		b.loadMin = l
	}
	b.loadMax = max(b.loadMax, l)
}

// noteErr reports the first few follower errors (a mux logs each).
func (b *bench) noteErr(err error) {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	b.errCount++
	if b.errCount <= 5 {
		b.o.logf("  follower error: %v", err)
	}
}

// idleCPU is the share of a core the controller uses while nothing is
// asked of it (its periodic reconcile and ring verification).
func (b *bench) idleCPU(ctx context.Context, d time.Duration) float64 {
	c0, _ := procCPU(b.pid)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	c1, _ := procCPU(b.pid)
	return float64(c1-c0) / float64(d)
}

// verify loads the ring as a fresh mux would and checks that every
// follower's plane holds exactly that table. The controller may publish
// on its own meanwhile (a bucket's history ages out after the chaining
// window): a mux found ahead of the table loaded means the store moved on,
// and the check starts again from the store's newer table.
func (b *bench) verify(ctx context.Context) (ring.Pair, error) {
	deadline := time.Now().Add(b.o.Timeout)
	for {
		want, ahead, err := b.verifyAt(ctx, deadline)
		if err != nil || !ahead {
			return want, err
		}
		// A mux ahead of what the store names would have applied an
		// unpublished generation: the deadline makes that an error.
		if time.Now().After(deadline) {
			return want, fmt.Errorf("a mux runs a generation above the store's %v", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// verifyAt is one pass of verify against the table the store holds now;
// ahead reports a mux that already runs a newer one.
func (b *bench) verifyAt(ctx context.Context, deadline time.Time) (want ring.Pair, ahead bool, err error) {
	ref, _, err := ring.NewFollower(b.st, b.k, ring.FollowerOptions{}).Load(ctx)
	if err != nil {
		return ring.Pair{}, false, err
	}
	want = ring.Pair{Incarnation: ref.Incarnation, Generation: ref.Generation}
	digest := tableDigest(ref)
	for i, f := range b.followers {
		for {
			p, d := f.plane.digest()
			if p == want {
				if d != digest {
					return want, false, fmt.Errorf("follower %d runs %v with another table than the store's", i, p)
				}
				break
			}
			if want.Less(p) {
				return want, true, nil
			}
			if time.Now().After(deadline) {
				return want, false, fmt.Errorf("follower %d runs %v, the store %v", i, p, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i, m := range b.xdp {
		for {
			inc, gen, _ := m.d.Mux().Version(instanceName)
			p := ring.Pair{Incarnation: inc, Generation: gen}
			if p == want {
				break
			}
			if want.Less(p) {
				return want, true, nil
			}
			if time.Now().After(deadline) {
				return want, false, fmt.Errorf("XDP mux %d runs %v, the store %v", i, p, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return want, false, nil
}

// Durations sorted, for percentiles.
func sortedDurations(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Presets are the sizes `beamer-lab bench control-plane` runs. The paper's
// instance (64K DIPs, 6.4M buckets) with 100 muxes needs ~18 GB for the
// followers alone (each keeps the ring follower's table, 20 bytes a bucket,
// and its data plane's words, 8 bytes): on one machine the paper's table
// runs with 20 muxes, and 100 muxes run with a table ten times smaller.
var Presets = map[string]Options{
	"paper":  {Followers: 20, DIPs: 64000, Buckets: 6_400_000, Batch: 32000, Ops: 20, ColdStarts: 3, XDPMuxes: 2},
	"fanout": {Followers: 100, DIPs: 6400, Buckets: 640_000, Batch: 3200, Ops: 20, ColdStarts: 3, XDPMuxes: 2},
	"custom": {Followers: 100, DIPs: 64000, Ops: 20, ColdStarts: 3},
}
