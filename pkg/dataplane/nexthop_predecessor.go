package dataplane

import (
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A predecessor's next hops. A daemon that dies uncleanly (SIGKILL) leaves
// its pinned program forwarding with the next hops it published and its
// FIB cache's epoch, neither followed nor ticked any more: published
// entries stay whatever they were, and every cached FIB answer stays
// current (its epoch never moves). The tables are not pinned state
// (muxStateMaps): the next daemon's program starts from empty ones. Until
// it swaps its program in (which may wait for instances: muxd adopt.go),
// it withdraws the predecessor's published entries once, at load, and
// ticks the predecessor's epoch with its own (every second and on every
// route, neighbour or link change), so the program it inherits asks the
// FIB, as a daemon halted cleanly leaves it (RetireNextHops).

// predecessorNextHops is the predecessor's epoch, while its program forwards.
type predecessorNextHops struct {
	epoch *wordArray
}

// adoptPredecessorNextHops withdraws the next hops published by the mux
// program pinned in dir, if any, and maps its epoch. Best effort: a
// predecessor of another layout (another beamer version) is left alone.
func adoptPredecessorNextHops(dir string, spec *ebpf.CollectionSpec) *predecessorNextHops {
	if dir == "" {
		return nil
	}
	p, err := openPinnedProgram(dir, spec, "beamer_mux")
	if err != nil { // ErrNothingPinned, or not ours to touch
		return nil
	}
	defer p.close()
	for _, t := range []struct {
		name string
		v6   bool
	}{{"nexthop_table", false}, {"nexthop6_table", true}} {
		m, err := p.mapNamed(t.name, true)
		if err != nil || m == nil {
			continue
		}
		words, err := mapWords(m)
		if err != nil {
			continue
		}
		if table, err := newNextHopTable(words, t.v6); err == nil {
			table.withdrawFound()
		}
		unix.Munmap(words.mem)
	}
	m, err := p.mapNamed("nexthop_epoch", true)
	if err != nil || m == nil {
		return nil
	}
	epoch, err := mapWords(m)
	if err != nil {
		return nil
	}
	delete(p.maps, kernelName("nexthop_epoch")) // the word array owns it now
	return &predecessorNextHops{epoch: epoch}
}

// flush moves the predecessor's epoch on: its program's cached answers
// are asked again.
func (p *predecessorNextHops) flush() {
	if p != nil {
		p.epoch.store(0, p.epoch.load(0)+1)
	}
}

func (p *predecessorNextHops) close() {
	if p != nil {
		p.epoch.close()
	}
}
