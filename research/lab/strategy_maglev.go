package lab

import (
	"fmt"
	"math/big"
	"time"
)

// maglevStrategy: the Maglev table needs a prime size, and its agents chain
// nothing (Maglev keeps no previous server).
type maglevStrategy struct{}

func init() { registerStrategy(maglevStrategy{}) }

func (maglevStrategy) Name() string { return "maglev" }

func (maglevStrategy) Check(buckets uint32) error {
	if !big.NewInt(int64(buckets)).ProbablyPrime(0) {
		return fmt.Errorf("buckets %d: a Maglev table needs a prime size (e.g. 1009, 65537)", buckets)
	}
	return nil
}

func (maglevStrategy) AgentWindow(time.Duration) time.Duration { return 0 }
