package dpbench

import (
	"errors"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestLiveTX runs the live XDP_TX rows on a small budget: the floor and
// the Beamer mux each send packets back out of the mux's veth, the
// counting sink on the generator's end counts them, and every packet is
// accounted for (sent = taken by the generator's veth + refused at the
// mux's ring; sent back = counted by the sink + refused at its ring). With
// a program in the mux's place that drops everything the row must fail:
// nothing arrived. No rate is asserted.
func TestLiveTX(t *testing.T) {
	netlabtest.RequireRoot(t)
	lab, err := netlab.New("livetx")
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	n, err := newLiveNet(lab)
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	if err := n.threaded(); err != nil {
		t.Fatal(err)
	}
	o := LiveQuick
	for _, c := range []struct {
		s    forwarding.Strategy
		size uint32
	}{{liveFloor, 0}, {forwarding.StrategyBeamer, 1000}} {
		r, err := n.measureTX(c.s, c.size, o, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.s, err)
		}
		t.Logf("%+v", r)
		if !r.TX || r.Delivered == 0 || r.MuxNs <= 0 || r.ProgramNs <= 0 {
			t.Errorf("%s: nothing delivered, or no program or thread statistics", c.s)
		}
		if uint64(r.Sent) != r.GenXmit+r.DropsToMux {
			t.Errorf("%s: sent %d, but the generator's veth took %d and refused %d", c.s, r.Sent, r.GenXmit, r.DropsToMux)
		}
		if r.Forwarded > r.GenXmit || r.Forwarded != r.Delivered+r.DropsToSink {
			t.Errorf("%s: %d received, %d sent back, %d counted by the sink, %d refused at its ring", c.s, r.GenXmit, r.Forwarded, r.Delivered, r.DropsToSink)
		}
	}
	drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL", Instructions: xdpReturn(1 /* XDP_DROP */)})
	if err != nil {
		t.Fatal(err)
	}
	defer drop.Close()
	if _, err := n.measureTX("", 0, o, drop); !errors.Is(err, errNothingArrived) {
		t.Errorf("a mux that drops everything: %v, want %v", err, errNothingArrived)
	}
}
