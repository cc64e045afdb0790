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

// CheckMaglevTableSize says why size is no Maglev table size.
func CheckMaglevTableSize(size uint32) error {
	return checkPrimeSize(size, fmt.Sprintf("maglev table size %d is not prime (Maglev needs a prime size)", size))
}

// checkPrimeSize says why size is no size of a Maglev lookup table (the
// table of Maglev and AWFD), what being the strategy's own words:
// Maglev's permutations (offset + j·skip mod M) visit every entry only when
// M is prime. This is the one prime rule: the message adds the nearest
// primes so the operator can pick one.
func checkPrimeSize(size uint32, what string) error {
	if isPrime(size) {
		return nil
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
