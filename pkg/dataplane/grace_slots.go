package dataplane

// graceSlots hands out the slots of an array the XDP program reads by an
// index it found elsewhere (a VIP record named by a front word, a traffic
// counter named by a VIP record or a server word). A slot nothing names
// any more is retired, and handed out again only after an RCU grace period
// (graceWait), when no packet can still be using it through an old name.
type graceSlots struct {
	free    []uint16     // slots no packet can be using
	retired []uint16     // slots named by nothing since the last grace period
	grace   func() error // graceWait; tests count the waits
}

// newGraceSlots holds slots 0..n-1, all free; slot 0 is taken first.
func newGraceSlots(n int) graceSlots {
	g := graceSlots{grace: graceWait}
	for i := n - 1; i >= 0; i-- {
		g.free = append(g.free, uint16(i))
	}
	return g
}

// take returns a slot no packet can be using, waiting for a grace period
// first when only retired ones are left; ok is false when every slot is
// in use.
func (g *graceSlots) take() (slot uint16, ok bool, err error) {
	if len(g.free) == 0 && len(g.retired) > 0 {
		if err := g.grace(); err != nil {
			return 0, false, err
		}
		g.free, g.retired = g.retired, nil
	}
	if len(g.free) == 0 {
		return 0, false, nil
	}
	slot = g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	return slot, true, nil
}

// retire gives back a slot something named until now.
func (g *graceSlots) retire(slot uint16) { g.retired = append(g.retired, slot) }

// putBack gives back a slot taken but never named: free at once.
func (g *graceSlots) putBack(slot uint16) { g.free = append(g.free, slot) }
