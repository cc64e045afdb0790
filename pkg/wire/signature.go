package wire

// PrismSigSeed seeds the 16 extra bits of a Prism signature (PRISM_SIG_SEED
// in bpf/strategy/prism.h).
const PrismSigSeed = 0x50524953

// Signature is the Prism connection signature of f (bpf/strategy/prism.h):
// the VIP id (the destination address's low 16 bits) in bits 48–63, the
// flow hash in bits 16–47 (so the signature names its bucket: SigBucket),
// and 16 more bits of a differently seeded mix in bits 0–15 — a 16-bit VIP
// id and a 48-bit hash of the 5-tuple, the paper's layout (§5.1, Fig. 8).
func (f Flow) Signature() uint64 {
	dst := addrWord(f.Dst)
	extra := jhash3(addrWord(f.Src), dst, uint32(f.SrcPort)<<16|uint32(f.DstPort), PrismSigSeed)
	return uint64(dst&0xffff)<<48 | uint64(f.Hash())<<16 | uint64(extra&0xffff)
}

// SigBucket is the bucket a signature's connections fall in, for a table
// of the given size.
func SigBucket(sig uint64, buckets uint32) uint32 { return BucketOf(uint32(sig>>16), buckets) }
