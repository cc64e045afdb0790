package assign

// mix64 is the SplitMix64 finaliser: a bijection on 64-bit words whose
// output bits each depend on all input bits. The comparison algorithms use
// it to derive their pseudo-random positions from server ids and table
// positions, so tables are reproducible across runs and machines.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Seeds keeping the hash families of the algorithms independent.
const (
	seedMaglevOffset = 0x6d61676c65762d6f
	seedMaglevSkip   = 0x6d61676c65762d73
	seedRing         = 0x72696e672d706f69
	seedRendezvous   = 0x72656e64657a766f
)

func hashID(seed uint64, id uint16) uint64 { return mix64(seed ^ mix64(uint64(id)+1)) }
