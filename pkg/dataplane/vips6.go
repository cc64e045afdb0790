package dataplane

import (
	"fmt"
	"net/netip"
)

// IPv6 VIPs (bpf/include/vips6.h): their records are the IPv4 VIPs' kind,
// in the same array under the same rules (filled before a front entry
// names them, reused after a grace period); the front is the vip6_front
// hash map, address -> record. The kernel replaces a hash element whole
// and frees the old one after RCU (the map is not preallocated), so a
// packet reads the old record index or the new one.

// set6 points v's front entry at record r, retiring v's previous record.
func (t *vipTable) set6(v netip.Addr, r uint16) error {
	if t.front6 == nil {
		t.free = append(t.free, r)
		return fmt.Errorf("dataplane: VIP %v: this mux program has no IPv6 front", v)
	}
	if err := t.front6.Put(v.As16(), uint32(r)); err != nil {
		t.free = append(t.free, r)
		return fmt.Errorf("dataplane: publishing IPv6 VIP %v: %w", v, err)
	}
	if s, ok := t.where[v]; ok {
		t.retired = append(t.retired, s.record)
	}
	t.where[v] = vipSlot{record: r}
	return nil
}

// remove6 unpublishes the IPv6 VIP v, whose record is s.record.
func (t *vipTable) remove6(v netip.Addr, s vipSlot) {
	if t.front6 != nil {
		t.front6.Delete(v.As16())
	}
	t.retired = append(t.retired, s.record)
	delete(t.where, v)
}
