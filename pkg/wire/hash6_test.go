package wire

import (
	"net/netip"
	"testing"
)

// TestFlowHashIPv6Folds checks the IPv6 flow hash is the IPv4 one over each
// address folded to the XOR of its four words (bpf/include/flow.h), and
// that every word of the address counts.
func TestFlowHashIPv6Folds(t *testing.T) {
	v6 := Flow{Src: netip.MustParseAddr("2001:db8:1:2::3"), Dst: netip.MustParseAddr("2001:db8::80"),
		SrcPort: 40000, DstPort: 80, Proto: 6}
	// 2001:db8:1:2::3 -> 0x20010db8 ^ 0x00010002 ^ 0 ^ 3 = 0x20000db9
	// 2001:db8::80    -> 0x20010db8 ^ 0x80          = 0x20010d38
	v4 := Flow{Src: netip.AddrFrom4([4]byte{0x20, 0x00, 0x0d, 0xb9}), Dst: netip.AddrFrom4([4]byte{0x20, 0x01, 0x0d, 0x38}),
		SrcPort: 40000, DstPort: 80, Proto: 6}
	if v6.Hash() != v4.Hash() {
		t.Fatalf("IPv6 hash %#x, want the folded IPv4 hash %#x", v6.Hash(), v4.Hash())
	}
	for i := range 16 {
		b := v6.Src.As16()
		b[i] ^= 0x10
		g := v6
		g.Src = netip.AddrFrom16(b)
		if g.Hash() == v6.Hash() {
			t.Errorf("flipping a bit of source byte %d leaves the hash %#x", i, g.Hash())
		}
	}
}
