package wire

import "net/netip"

const jhashInitval = 0xdeadbeef

// jhash3 is lookup3's final mix over three words, as Linux's jhash_3words.
func jhash3(a, b, c, initval uint32) uint32 {
	initval += jhashInitval + 3<<2
	a += initval
	b += initval
	c += initval
	c ^= b
	c -= rol32(b, 14)
	a ^= c
	a -= rol32(c, 11)
	b ^= a
	b -= rol32(a, 25)
	c ^= b
	c -= rol32(b, 16)
	a ^= c
	a -= rol32(c, 4)
	b ^= a
	b -= rol32(a, 14)
	c ^= b
	c -= rol32(b, 24)
	return c
}

func rol32(w uint32, s uint) uint32 { return w<<s | w>>(32-s) }

// Flow is a connection's 5-tuple as the mux sees it (client → VIP).
type Flow struct {
	Src, Dst         netip.Addr // IPv4, or IPv6 (folded: addrWord)
	SrcPort, DstPort uint16
	Proto            uint8
}

func addrWord(a netip.Addr) uint32 {
	if a.Is6() && !a.Is4In6() {
		// IPv6: the XOR of the address's four host-order words
		// (bpf/include/flow.h addr6_fold).
		b := a.As16()
		var w uint32
		for i := 0; i < 16; i += 4 {
			w ^= uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
		}
		return w
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// Hash is the flow hash over the whole 5-tuple (see bpf/include/flow_hash.h).
func (f Flow) Hash() uint32 {
	return jhash3(addrWord(f.Src), addrWord(f.Dst), uint32(f.SrcPort)<<16|uint32(f.DstPort), uint32(f.Proto))
}

// BucketOf maps a hash onto 0..buckets-1 by multiply-shift.
func BucketOf(hash, buckets uint32) uint32 {
	return uint32(uint64(hash) * uint64(buckets) >> 32)
}

// Bucket is the bucket f falls in for a table of the given size.
func (f Flow) Bucket(buckets uint32) uint32 { return BucketOf(f.Hash(), buckets) }
