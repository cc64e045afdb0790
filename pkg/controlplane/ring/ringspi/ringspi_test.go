package ringspi

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

type nop struct{}

func (nop) Delta(*forwarding.Delta) Bytes        { return Bytes{Empty: true} }
func (nop) Table(*forwarding.Table) Bytes        { return Bytes{Empty: true} }
func (nop) ReadDelta(*Reader, *forwarding.Delta) {}
func (nop) ReadTable(*Reader, *forwarding.Table) {}

// Sections come back in the order of their positions whatever the order
// of registration (init order follows import paths, not the wire).
func TestSectionsInPositionOrder(t *testing.T) {
	var g registry
	for _, p := range []int{3, 1, 2} {
		if err := g.register(p, "s"+string(rune('0'+p)), nop{}); err != nil {
			t.Fatal(err)
		}
	}
	secs, err := g.list()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range secs {
		if s.Position != i+1 || s.Name != "s"+string(rune('1'+i)) {
			t.Errorf("section %d: %v", i, s)
		}
	}
}

// A taken position, a taken name, a position below 1 and a nil section are
// refused at registration; Register panics on them (in init).
func TestRegisterRefuses(t *testing.T) {
	var g registry
	if err := g.register(1, "a", nop{}); err != nil {
		t.Fatal(err)
	}
	for name, reg := range map[string]func() error{
		"position taken": func() error { return g.register(1, "b", nop{}) },
		"name taken":     func() error { return g.register(2, "a", nop{}) },
		"position 0":     func() error { return g.register(0, "c", nop{}) },
		"negative":       func() error { return g.register(-1, "c", nop{}) },
		"no section":     func() error { return g.register(2, "c", nil) },
		"no name":        func() error { return g.register(2, "", nop{}) },
	} {
		if err := reg(); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
	if secs, err := g.list(); err != nil || len(secs) != 1 {
		t.Errorf("after refusals: %v, %v", secs, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Register of a taken position did not panic")
		}
	}()
	Register(1, "ringspi test a", nop{})
	Register(1, "ringspi test b", nop{})
}

// A missing position before a registered one (a build with some
// strategies only) makes the list an error that names the hole, as the
// missing section's bytes would come first on the wire.
func TestMissingPositionRefused(t *testing.T) {
	var g registry
	if _, err := g.list(); err != nil {
		t.Fatalf("no sections: %v", err)
	}
	if err := g.register(2, "second", nop{}); err != nil {
		t.Fatal(err)
	}
	_, err := g.list()
	if err == nil || !strings.Contains(err.Error(), "no payload section at position 1") || !strings.Contains(err.Error(), "section 2 (second)") {
		t.Fatalf("gap at 1: %v", err)
	}
	if err := g.register(4, "fourth", nop{}); err != nil {
		t.Fatal(err)
	}
	if err := g.register(1, "first", nop{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.list(); err == nil || !strings.Contains(err.Error(), "position 3") {
		t.Fatalf("gap at 3: %v", err)
	}
	if err := g.register(3, "third", nop{}); err != nil {
		t.Fatal(err)
	}
	if secs, err := g.list(); err != nil || len(secs) != 4 {
		t.Fatalf("no gap: %v, %v", secs, err)
	}
}

// A Reader stops at the first short read and keeps that error; counts that
// cannot fit are refused before anything is allocated.
func TestReader(t *testing.T) {
	r := NewReader([]byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	if n := r.Count(4); n != 2 || r.Err() != nil {
		t.Fatalf("count %d, %v", n, r.Err())
	}
	if b := r.Take(8); len(b) != 8 || r.Len() != 1 {
		t.Fatalf("took %d, %d left", len(b), r.Len())
	}
	if b := r.Take(2); b != nil || r.Err() == nil {
		t.Fatalf("short take: %v, %v", b, r.Err())
	}
	first := r.Err()
	r.Fail(nil)
	if r.U32() != 0 || r.Err() != first {
		t.Fatal("reads after an error are not zeros, or the error changed")
	}
	r = NewReader([]byte{0xff, 0xff, 0xff, 0xff, 1, 2})
	if n := r.Count(12); n != 0 || r.Err() == nil || !strings.Contains(r.Err().Error(), "does not fit") {
		t.Fatalf("huge count: %d, %v", n, r.Err())
	}
}
