package forwarding

import "fmt"

// MinBuckets is the smallest bucket count (or Maglev table size) an
// instance may have. B must exceed the number of DIPs (a DIP with no bucket
// gets no traffic), so B = 1 leaves room for none: such an instance can
// never forward anything. 2 is the smallest table that can. The right size
// depends on the DIP count, which every add-dip checks (B > DIPs), and the
// paper's advice (about 100 buckets per DIP) is shown by `ctl show`; a
// higher floor here would also refuse small instances that work today,
// because muxes run this check on every configuration they read.
const MinBuckets = 2

// MaxBuckets is the largest bucket count (or Maglev table size).
const MaxBuckets = 1 << 24

// isPrime tells whether n is prime (trial division: n ≤ 2²⁴, at most 4096
// steps).
func isPrime(n uint32) bool {
	if n < 2 {
		return false
	}
	for d := uint32(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// checkMaglevSize is the prime-size rule for a Maglev instance.
func checkMaglevSize(size uint32) error { return CheckPrimeTableSize(StrategyMaglev, size) }

// CheckPrimeTableSize says why size is no table size for strategy, whose
// table is a Maglev lookup table (Maglev, AWFD): Maglev's permutations
// (offset + j·skip mod M) visit every entry only when M is prime. This is
// the one prime rule: the message names the instance's strategy, and the
// nearest primes so the operator can pick one.
func CheckPrimeTableSize(strategy Strategy, size uint32) error {
	if isPrime(size) {
		return nil
	}
	what := fmt.Sprintf("%s table size %d is not prime (Maglev needs a prime size)", strategy, size)
	if strategy != StrategyMaglev {
		what = fmt.Sprintf("%s table size %d is not prime (%s builds a Maglev table, which needs a prime size)", strategy, size, strategy)
	}
	if size < 2 {
		return fmt.Errorf("%s: the smallest prime is 2", what)
	}
	below, above := size-1, size+1 // 2 and 3 are prime: size ≥ 4 here
	for !isPrime(below) {
		below--
	}
	for !isPrime(above) {
		above++
	}
	if above > MaxBuckets {
		return fmt.Errorf("%s: the nearest prime is %d", what, below)
	}
	return fmt.Errorf("%s: the nearest primes are %d and %d", what, below, above)
}
