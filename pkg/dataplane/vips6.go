package dataplane

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// IPv6 VIPs (bpf/include/vips6.h): their front is the IPv4 front's twin,
// keyed by the fold of the address (the XOR of its four words, flow.h),
// and their records are the IPv4 VIPs' kind, in the same array under the
// same rules. Since two addresses may fold alike, each record's address is
// kept in vip6_addrs, written before a front word names the record (and,
// as the record, rewritten only after a grace period frees it), which the
// program compares.

// foldRaw is the fold as the program computes it on the packet's bytes:
// the XOR of the four 32-bit words as memory holds them.
func foldRaw(v netip.Addr) uint32 {
	a := v.As16()
	return binary.LittleEndian.Uint32(a[0:]) ^ binary.LittleEndian.Uint32(a[4:]) ^
		binary.LittleEndian.Uint32(a[8:]) ^ binary.LittleEndian.Uint32(a[12:])
}

// foldHost is the fold as a number (the flow hash's and vip_line's view).
func foldHost(v netip.Addr) uint32 {
	a := v.As16()
	return binary.BigEndian.Uint32(a[0:]) ^ binary.BigEndian.Uint32(a[4:]) ^
		binary.BigEndian.Uint32(a[8:]) ^ binary.BigEndian.Uint32(a[12:])
}

// setAddr6 writes the address of IPv6 VIP v into record r's slot of
// vip6_addrs: the record is named by no front word yet.
func (t *vipTable) setAddr6(v netip.Addr, r uint16) error {
	if t.front6 == nil || t.addrs6 == nil {
		return fmt.Errorf("dataplane: VIP %v: this mux program has no IPv6 front", v)
	}
	if err := t.addrs6.Put(uint32(r), v.As16()); err != nil {
		return fmt.Errorf("dataplane: publishing IPv6 VIP %v: %w", v, err)
	}
	return nil
}
