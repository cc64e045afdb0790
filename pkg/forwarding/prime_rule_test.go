package forwarding

import "testing"

// TestPrimeRuleNamesStrategy: the one prime rule names the instance's
// strategy: an AWFD instance is not told about Maglev's table as if it were
// a Maglev instance.
func TestPrimeRuleNamesStrategy(t *testing.T) {
	in := &Instance{Name: "web", Strategy: StrategyAWFD, VIPs: nil, Buckets: 1000}
	want := "awfd table size 1000 is not prime (awfd builds a Maglev table, which needs a prime size): the nearest primes are 997 and 1009"
	if err := checkAWFD(in); err == nil || err.Error() != want {
		t.Errorf("awfd, 1000 buckets: %v, want %q", err, want)
	}
	want = "maglev table size 1000 is not prime (Maglev needs a prime size): the nearest primes are 997 and 1009"
	if err := CheckMaglevTableSize(1000); err == nil || err.Error() != want {
		t.Errorf("maglev, 1000: %v, want %q", err, want)
	}
	for _, size := range []uint32{0, 1} {
		if err := CheckMaglevTableSize(size); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}
