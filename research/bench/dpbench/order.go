package dpbench

import "fmt"

// The order in which the benchmark visits its flows: bench_order in
// bpf/bench/mux_bench.h, mirrored here so that the per-packet rows send the
// same sequence and so that every flow count in use is checked to be a
// permutation. Flows are visited in pseudo-random order because real
// traffic interleaves connections: replaying flows in the order a stateful
// table was filled would read it almost sequentially.

const orderWalks = 64 // BENCH_ORDER_WALKS

func orderMix(x, mask, key uint32) uint32 {
	x = (x * 0x9e3779b1) & mask
	x ^= x >> 5
	x = (x + key*0x7feb352d) & mask
	x = (x * 0x85ebca77) & mask
	x ^= x >> 11
	x = (x * 0xc2b2ae3d) & mask
	x ^= x >> 7
	return x
}

func orderMask(n uint32) uint32 {
	m := n - 1
	m |= m >> 1
	m |= m >> 2
	m |= m >> 4
	m |= m >> 8
	m |= m >> 16
	return m
}

// The orders in use (bench_key): the measured one, and the one connection
// tables are filled in.
const (
	measureKey = 0
	fillKey    = 1
)

// benchOrder is the flow the seq-th repetition uses (seq < n) in the
// measured order.
func benchOrder(seq, n uint32) uint32 { return keyedOrder(seq, n, measureKey) }

func keyedOrder(seq, n, key uint32) uint32 {
	mask, x := orderMask(n), seq
	for range orderWalks {
		x = orderMix(x, mask, key)
		if x < n {
			return x
		}
	}
	return seq
}

// checkOrder verifies that both orders visit each of n flows exactly once
// without falling back (a walk longer than the program allows).
func checkOrder(n uint32) error {
	for _, key := range []uint32{measureKey, fillKey} {
		if err := checkKeyedOrder(n, key); err != nil {
			return err
		}
	}
	return nil
}

func checkKeyedOrder(n, key uint32) error {
	if n == 0 {
		return nil
	}
	mask := orderMask(n)
	seen := make([]bool, n)
	for seq := range n {
		x, ok := seq, false
		for range orderWalks {
			if x = orderMix(x, mask, key); x < n {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("flow order over %d flows: repetition %d needs more than %d walks", n, seq, orderWalks)
		}
		if seen[x] {
			return fmt.Errorf("flow order over %d flows: flow %d visited twice", n, x)
		}
		seen[x] = true
	}
	return nil
}
