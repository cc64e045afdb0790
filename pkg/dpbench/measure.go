package dpbench

import (
	"fmt"
	"sort"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
	"github.com/cilium/ebpf"
)

// xdpMD is struct xdp_md, the context of an XDP test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// counterReader reads a program's decision counters.
type counterReader func() (map[string]uint64, error)

// trial is one measurement: repeat runs of prog on frame in one test run.
type trial struct {
	ns      *netlab.Namespace
	prog    *ebpf.Program
	frame   []byte
	ctx     any
	want    uint32 // the action every run must return
	repeat  int
	counter string // must move by exactly repeat ("" = not checked)
	read    counterReader
}

// run measures t trials times and returns the median ns per run and
// whether every trial took the intended path.
func (t trial) run(trials int) (float64, bool, error) {
	var samples []float64
	verified := t.counter != ""
	for i := 0; i < trials; i++ {
		var before map[string]uint64
		var err error
		if t.counter != "" {
			if before, err = t.read(); err != nil {
				return 0, false, err
			}
		}
		var ret uint32
		var took time.Duration
		// On one CPU, so per-CPU state (next-hop cache) stays warm.
		err = t.ns.DoOnCPU(0, func() error {
			start := time.Now()
			var err error
			ret, err = t.prog.Run(&ebpf.RunOptions{Data: t.frame, Repeat: uint32(t.repeat), Context: t.ctx})
			took = time.Since(start)
			return err
		})
		if err != nil {
			return 0, false, err
		}
		if ret != t.want {
			return 0, false, fmt.Errorf("%s returned %d, want %d", t.prog, ret, t.want)
		}
		if t.counter != "" {
			after, err := t.read()
			if err != nil {
				return 0, false, err
			}
			if after[t.counter]-before[t.counter] != uint64(t.repeat) {
				verified = false
			}
		}
		samples = append(samples, float64(took.Nanoseconds())/float64(t.repeat))
	}
	sort.Float64s(samples)
	return samples[len(samples)/2], verified, nil
}
