package wire

// JHash3 is lookup3's final mix over three words seeded with initval, the
// function behind the flow hash (bpf/include/flow_hash.h jhash_3words);
// the Cheetah cookie keys it (pkg/strategy/cheetah/cookie).
func JHash3(a, b, c, initval uint32) uint32 { return jhash3(a, b, c, initval) }

// AddrWord is an IPv4 address as a host-order number.
func AddrWord(a [4]byte) uint32 {
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}
