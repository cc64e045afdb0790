package dataplane

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The VIP front's and records' shape (bpf/include/vips.h, limits.h) is
// read from the program: muxLimit().vipFrontBits, .vipFrontWays,
// .vipRecords and .muxLimit().vipRecordLen (limits.go).

// vipTable writes the mux's VIP front and records (bpf/include/vips.h): a
// VIP is one 64-bit word in the front line its address hashes to, naming
// its record. The rules that keep every packet's view whole:
//   - a front word is written with one atomic store, and a VIP keeps its
//     word (line and way) for as long as it exists, so a packet never finds
//     it twice or not at all while it is published;
//   - a record is filled while no word names it, then a word is pointed at
//     it;
//   - a record a word stopped naming is retired and reused only after an
//     RCU grace period (graceWait), when no packet can still be reading it;
//   - the version (generation, incarnation) changes in place, one atomic
//     64-bit store.
type vipTable struct {
	front      *wordArray // VIP_FRONT_LINES × 8 words
	records    *wordArray // VIP_RECORDS × 64 bytes
	graceSlots            // the records: retired, reused after a grace period
	where      map[netip.Addr]vipSlot
	front6     *wordArray // IPv6 VIPs' front, the same shape (vips6.go)
	addrs6     *ebpf.Map  // IPv6 VIPs' addresses by record (vips6.go)
}

// vipSlot is where a VIP is: its front word and its record.
type vipSlot struct {
	word   uint32 // index of the 64-bit front word
	record uint16
}

func newVIPTable(front, records *wordArray) *vipTable {
	return &vipTable{front: front, records: records, where: map[netip.Addr]vipSlot{}, graceSlots: newGraceSlots(muxLimit().vipRecords)}
}

// vipLine is vip_line in bpf/include/vips.h (of an IPv6 VIP's fold,
// vips6.go).
func vipLine(v netip.Addr) uint32 {
	if is6(v) {
		return addrLine(foldHost(v), uint(muxLimit().vipFrontBits))
	}
	a := v.As4()
	return addrLine(binary.BigEndian.Uint32(a[:]), uint(muxLimit().vipFrontBits))
}

// addrLine is addr_line in bpf/include/defs.h: the line of an address
// (its host-order value, or an IPv6 address's fold) in a table of 2^bits
// lines.
func addrLine(key uint32, bits uint) uint32 {
	return (key * 2654435761) >> (32 - bits)
}

// frontWord is a VIP's front word: its address as the packet holds it
// (the program compares the raw 32 bits; an IPv6 VIP's fold) and its
// record + 1.
func frontWord(v netip.Addr, record uint16) uint64 {
	if is6(v) {
		return uint64(foldRaw(v)) | (uint64(record)+1)<<32
	}
	a := v.As4()
	return uint64(binary.LittleEndian.Uint32(a[:])) | (uint64(record)+1)<<32
}

// frontOf is the front a VIP's word lives in: one per family.
func (t *vipTable) frontOf(v netip.Addr) *wordArray {
	if is6(v) {
		return t.front6
	}
	return t.front
}

// fits tells whether vips can all be published now: each front line holds
// its VIPs already published (those of an instance being replaced too:
// they leave only after the new records are published) and the new ones.
func (t *vipTable) fits(vips []netip.Addr) error {
	type frontLine struct {
		six  bool
		line uint32
	}
	need := map[frontLine]int{}
	for _, v := range vips {
		if _, ok := t.where[v]; !ok {
			need[frontLine{is6(v), vipLine(v)}]++
		}
	}
	ways := muxLimit().vipFrontWays
	for fl, n := range need {
		line, front := fl.line, t.front
		if fl.six {
			front = t.front6
		}
		used := 0
		for way := range uint32(ways) {
			if front.load(line*uint32(ways)+way) != 0 {
				used++
			}
		}
		if used+n > ways {
			return fmt.Errorf("dataplane: %d VIPs hash to front line %d, which has room for %d more (a line holds %d; choose other VIP addresses)",
				n, line, ways-used, ways)
		}
	}
	return nil
}

// set publishes rec for VIP v in a fresh record: a VIP already published
// has its word pointed at the new record (the old one retired); a new VIP
// takes a free word of its line.
func (t *vipTable) set(v netip.Addr, rec muxVipInfo) error {
	r, err := t.alloc()
	if err != nil {
		return err
	}
	mem := t.records.mem[int(r)*muxLimit().vipRecordLen : (int(r)+1)*muxLimit().vipRecordLen]
	clear(mem)
	*(*muxVipInfo)(unsafe.Pointer(&mem[0])) = rec
	if is6(v) {
		if err := t.setAddr6(v, r); err != nil {
			t.putBack(r)
			return err
		}
	}
	front := t.frontOf(v)
	if s, ok := t.where[v]; ok {
		front.store(s.word, frontWord(v, r))
		t.retire(s.record)
		t.where[v] = vipSlot{word: s.word, record: r}
		return nil
	}
	line := vipLine(v)
	ways := uint32(muxLimit().vipFrontWays)
	for way := range ways {
		w := line*ways + way
		if front.load(w) == 0 {
			front.store(w, frontWord(v, r))
			t.where[v] = vipSlot{word: w, record: r}
			return nil
		}
	}
	t.putBack(r)
	return fmt.Errorf("dataplane: VIP %v: its front line already holds %d VIPs", v, ways)
}

// setVersion stores a published VIP's version word in place.
func (t *vipTable) setVersion(v netip.Addr, generation, incarnation uint32) error {
	s, ok := t.where[v]
	if !ok {
		return fmt.Errorf("dataplane: VIP %v is not published", v)
	}
	p := (*uint64)(unsafe.Pointer(&t.records.mem[int(s.record)*muxLimit().vipRecordLen]))
	atomic.StoreUint64(p, uint64(incarnation)<<32|uint64(generation))
	return nil
}

// remove unpublishes v: its word is cleared, its record retired.
func (t *vipTable) remove(v netip.Addr) {
	s, ok := t.where[v]
	if !ok {
		return
	}
	t.frontOf(v).store(s.word, 0)
	t.retire(s.record)
	delete(t.where, v)
}

// alloc takes a record no packet can be reading, waiting for a grace
// period first when only retired ones are left.
func (t *vipTable) alloc() (uint16, error) {
	r, ok, err := t.take()
	if err == nil && !ok {
		err = fmt.Errorf("dataplane: all %d VIP records in use", muxLimit().vipRecords)
	}
	return r, err
}

// memberbarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL (linux/membarrier.h).
const memberbarrierCmdGlobal = 1

// graceWait returns once every BPF program that was running when it was
// called has finished: MEMBARRIER_CMD_GLOBAL waits for an RCU grace
// period (synchronize_rcu), and XDP programs run inside RCU read-side
// sections — the wait the kernel itself does after a map-in-map update.
func graceWait() error {
	if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, memberbarrierCmdGlobal, 0, 0); e != 0 {
		return fmt.Errorf("dataplane: waiting for an RCU grace period (membarrier): %w", e)
	}
	return nil
}
