package dpbench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
)

// xdpMD is struct xdp_md, the context of an XDP test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// counterReader reads a program's decision counters.
type counterReader func() (map[string]uint64, error)

// trial is one row's measurement: the batched method (repeat runs of the
// benchmark build of prog in one test run) and, when single is set, the
// per-packet method (one test run per packet of the production program,
// kernel-reported time).
type trial struct {
	ns      *netlab.Namespace
	prog    *ebpf.Program // benchmark build: undoes its changes so repeats take the path again
	frame   []byte
	ctx     any
	want    uint32 // the action every run must return
	repeat  int
	counter string // must move by exactly the runs made ("" = not checked)
	or      string // with counter: counter and this together must (a hit or a miss)
	unmoved string // with counter "": must not move (the path that does nothing)
	read    counterReader

	// single is the production program the per-packet method runs (nil:
	// no per-packet figure); frameAt gives the frame of its seq-th run
	// (nil: frame every time).
	single  *ebpf.Program
	frameAt func(seq uint32) []byte
	packets int // per-packet runs per trial

	// base is the compare mode's baseline build of prog, measured in
	// alternation with it on the same maps; baseSingle the baseline's
	// production program, measured per packet beside single.
	base, baseSingle *ebpf.Program

	// empty is the empty program of the same kind (returning emptyWant),
	// measured in every trial just before the row on the same packet: each
	// trial's net is the row minus the empty program of that trial, so
	// that load which comes and goes on a shared machine nets out.
	empty     *ebpf.Program
	emptyWant uint32
}

// spread summarises a figure over trials.
type spread struct {
	Median float64 `json:"ns_median"`
	Min    float64 `json:"ns_min"`
	Max    float64 `json:"ns_max"`
}

func spreadOf(samples []float64) spread {
	s := slices.Clone(samples)
	slices.Sort(s)
	return spread{Median: s[len(s)/2], Min: s[0], Max: s[len(s)-1]}
}

// result is a trial's figures.
type result struct {
	// Medians over trials of each trial's figure minus the empty program's
	// in the same trial (nil: no empty program given).
	batchedNet, perPacketNet, baselineNet, baselinePerPacketNet *float64
	// The quiet figures: the quickest trial minus the empty program's
	// quickest (nil: no empty program given). On a shared machine a
	// neighbour's load only ever adds time, so the quickest of many short
	// trials is the program's own cost; the median says what this machine
	// gave most of the time.
	batchedQuiet, perPacketQuiet, baselineQuiet, baselinePerPacketQuiet *float64

	batched          spread
	verified         bool
	perPacket        *spread
	perPacketOK      bool
	baseline         *spread
	baselineVerified bool

	baselinePerPacket   *spread
	baselinePerPacketOK bool
}

// delta runs fn and says whether the path counters show the runs took the
// intended path: counter moved by exactly runs, or unmoved did not move.
func (t trial) delta(runs uint64, fn func() error) (bool, error) {
	name := t.counter
	if name == "" {
		name = t.unmoved
	}
	if name == "" {
		return false, fn()
	}
	var before, after map[string]uint64
	for attempt := 1; ; attempt++ {
		var err error
		if before, err = t.read(); err != nil {
			return false, err
		}
		seen := interrupted.Load()
		if err := fn(); err != nil {
			return false, err
		}
		if after, err = t.read(); err != nil {
			return false, err
		}
		// A run stopped part way by a signal and run again moved the
		// counters by more than its runs: measure the step again (fn
		// starts afresh), a few times; beyond that it stays unverified.
		if interrupted.Load() == seen || attempt == maxInterruptedAttempts {
			break
		}
	}
	if _, ok := after[name]; !ok {
		return false, fmt.Errorf("no counter %s", name)
	}
	moved := after[name] - before[name]
	if t.or != "" {
		// Every run took the path or its alternative, and nine in ten
		// the path itself: a row of connection-table hits whose table
		// lost a few flows still measures hits; one whose table is
		// missing or empty (all misses) measures another path.
		main := moved
		moved += after[t.or] - before[t.or]
		return moved == runs && main*10 >= runs*9, nil
	}
	if t.counter == "" {
		return moved == 0, nil
	}
	return moved == runs, nil
}

// batched runs prog repeat times in one test run, on CPU 0, and returns the
// kernel-reported time per run and whether the counter moved by repeat.
func (t trial) batched(prog *ebpf.Program) (float64, bool, error) {
	ctx, err := contextBytes(t.ctx)
	if err != nil {
		return 0, false, err
	}
	var ret, ns uint32
	ok, err := t.delta(uint64(t.repeat), func() error {
		// On one CPU, so per-CPU state (next-hop cache) stays warm.
		return t.ns.DoOnCPU(0, func() (err error) {
			ret, ns, err = runTest(prog.FD(), t.frame, ctx, uint32(t.repeat))
			return err
		})
	})
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", prog, err)
	}
	if ret != t.want {
		return 0, false, fmt.Errorf("%s returned %d, want %d", prog, ret, t.want)
	}
	return float64(ns), ok, nil
}

// perPacket runs the production program once per packet, t.packets times,
// on CPU 0, packets n*i ... of the sequence, and returns the mean
// kernel-reported time per run, leaving out interrupted runs: those longer
// than interruptedOver times the trial's median. For a single run the
// kernel's clock counts whatever stopped it — an interrupt, the hypervisor
// taking the virtual CPU (seen: single runs of 10-255 µs among runs of
// 0.1-1 µs) — so one such run among 2,000 added 5-130 ns to a trial's mean
// (issue 27: the per-packet Maglev rows read that much above the batched
// ones). The program's own spread (a bucket chain longer than most, a
// cache miss) stays in the mean: it is well under ten times the median.
func (t trial) perPacket(i int) (float64, bool, error) { return t.perPacketOf(t.single, i) }

// perPacketOf is perPacket with another production program (the compare
// mode's baseline).
func (t trial) perPacketOf(prog *ebpf.Program, i int) (float64, bool, error) {
	ctx, err := contextBytes(t.ctx)
	if err != nil {
		return 0, false, err
	}
	frames := make([][]byte, t.packets)
	for j := range frames {
		frames[j] = t.frame
		if t.frameAt != nil {
			frames[j] = t.frameAt(uint32(i*t.packets + j))
		}
	}
	runs := make([]float64, 0, t.packets)
	ok, err := t.delta(uint64(t.packets), func() error {
		runs = runs[:0] // delta may run this again
		return t.ns.DoOnCPU(0, func() error {
			fd := prog.FD()
			for _, f := range frames {
				// The kernel copies the frame in: each run sees it fresh.
				ret, ns, err := runTest(fd, f, ctx, 1)
				if err != nil {
					return fmt.Errorf("%s: %w", prog, err)
				}
				if ret != t.want {
					return fmt.Errorf("%s returned %d, want %d", prog, ret, t.want)
				}
				runs = append(runs, float64(ns))
			}
			return nil
		})
	})
	if err != nil {
		return 0, false, err
	}
	return uninterruptedMean(runs), ok, nil
}

// maxInterruptedAttempts: how many times delta measures a step again
// after a signal stopped one of its runs part way.
const maxInterruptedAttempts = 5

// interruptedOver: a single run this many times the median of its trial
// was interrupted (perPacket).
const interruptedOver = 10

// uninterruptedMean is the mean of the runs not longer than
// interruptedOver times their median.
func uninterruptedMean(runs []float64) float64 {
	if len(runs) == 0 {
		return 0
	}
	limit := interruptedOver * max(spreadOf(runs).Median, 1)
	sum, n := 0.0, 0
	for _, r := range runs {
		if r <= limit {
			sum, n = sum+r, n+1
		}
	}
	return sum / float64(n)
}

func contextBytes(ctx any) ([]byte, error) {
	switch c := ctx.(type) {
	case nil:
		return nil, nil
	case []byte:
		return c, nil
	default:
		var b bytes.Buffer
		if err := binary.Write(&b, binary.NativeEndian, c); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
}

// run measures t over trials: each trial runs the batched method (and the
// baseline's, in alternation) and the per-packet method. A figure is
// verified only if every trial's counter moved by exactly its runs.
func (t trial) run(trials int) (result, error) {
	checked := t.counter != "" || t.unmoved != ""
	r := result{verified: checked, perPacketOK: checked, baselineVerified: checked, baselinePerPacketOK: checked}
	var b, base, single, baseSingle, bNet, baseNet, singleNet, baseSingleNet, empties, singleEmpties []float64
	e := t
	e.prog, e.single, e.want, e.counter, e.or, e.unmoved, e.frameAt, e.base, e.baseSingle = t.empty, t.empty, t.emptyWant, "", "", "", nil, nil, nil
	for i := 0; i < trials; i++ {
		var en float64
		if t.empty != nil && t.prog != nil {
			var err error
			if en, _, err = e.batched(e.prog); err != nil {
				return r, fmt.Errorf("empty program: %w", err)
			}
			empties = append(empties, en)
		}
		// In the compare mode the two builds take turns going first: the
		// second of a pair visits the flows the first has just brought
		// into the caches, which on a large table is worth tens of ns.
		baseFirst := i%2 == 1
		runBase := func() error {
			if t.base == nil {
				return nil
			}
			ns, ok, err := t.batched(t.base)
			if err != nil {
				return fmt.Errorf("baseline: %w", err)
			}
			base, r.baselineVerified, baseNet = append(base, ns), r.baselineVerified && ok, append(baseNet, ns-en)
			return nil
		}
		if t.prog != nil {
			if baseFirst {
				if err := runBase(); err != nil {
					return r, err
				}
			}
			ns, ok, err := t.batched(t.prog)
			if err != nil {
				return r, err
			}
			b, r.verified, bNet = append(b, ns), r.verified && ok, append(bNet, ns-en)
			if !baseFirst {
				if err := runBase(); err != nil {
					return r, err
				}
			}
		}
		if t.single != nil && t.packets > 0 {
			var ep float64
			var err error
			if t.empty != nil {
				if ep, _, err = e.perPacket(i); err != nil {
					return r, fmt.Errorf("empty program per packet: %w", err)
				}
				singleEmpties = append(singleEmpties, ep)
			}
			runBase := func() error {
				if t.baseSingle == nil {
					return nil
				}
				ns, ok, err := t.perPacketOf(t.baseSingle, i)
				if err != nil {
					return fmt.Errorf("baseline per packet: %w", err)
				}
				baseSingle, r.baselinePerPacketOK, baseSingleNet = append(baseSingle, ns), r.baselinePerPacketOK && ok, append(baseSingleNet, ns-ep)
				return nil
			}
			if baseFirst {
				if err := runBase(); err != nil {
					return r, err
				}
			}
			ns, ok, err := t.perPacket(i)
			if err != nil {
				return r, fmt.Errorf("per packet: %w", err)
			}
			single, r.perPacketOK, singleNet = append(single, ns), r.perPacketOK && ok, append(singleNet, ns-ep)
			if !baseFirst {
				if err := runBase(); err != nil {
					return r, err
				}
			}
		}
	}
	if t.empty != nil {
		med := func(v []float64) *float64 {
			if v == nil {
				return nil
			}
			m := spreadOf(v).Median
			return &m
		}
		r.batchedNet, r.baselineNet, r.perPacketNet, r.baselinePerPacketNet = med(bNet), med(baseNet), med(singleNet), med(baseSingleNet)
		quiet := func(v, empty []float64) *float64 {
			if v == nil || empty == nil {
				return nil
			}
			q := slices.Min(v) - slices.Min(empty)
			return &q
		}
		r.batchedQuiet, r.baselineQuiet, r.perPacketQuiet = quiet(b, empties), quiet(base, empties), quiet(single, singleEmpties)
		r.baselinePerPacketQuiet = quiet(baseSingle, singleEmpties)
	}
	if b != nil {
		r.batched = spreadOf(b)
	}
	if base != nil {
		s := spreadOf(base)
		r.baseline = &s
	}
	if single != nil {
		s := spreadOf(single)
		r.perPacket = &s
	}
	if baseSingle != nil {
		s := spreadOf(baseSingle)
		r.baselinePerPacket = &s
	}
	return r, nil
}
