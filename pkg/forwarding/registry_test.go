package forwarding

import (
	"slices"
	"strings"
	"testing"
)

// TestRegistry: names come back sorted, a missing one is not found, and a
// name registered twice panics naming the layer.
func TestRegistry(t *testing.T) {
	r := NewRegistry[int]("testspi")
	r.Register(StrategyPrism, 3)
	r.Register(StrategyBeamer, 1)
	if v, ok := r.Lookup(StrategyPrism); !ok || v != 3 {
		t.Fatalf("Lookup(prism) = %d, %v", v, ok)
	}
	if _, ok := r.Lookup(StrategyCheetah); ok {
		t.Fatal("Lookup(cheetah) found something never registered")
	}
	if got := r.Names(); !slices.Equal(got, []Strategy{StrategyBeamer, StrategyPrism}) {
		t.Fatalf("Names() = %v", got)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "testspi") {
			t.Fatalf("second registration: panic %v, want one naming the layer", p)
		}
	}()
	r.Register(StrategyBeamer, 2)
}
