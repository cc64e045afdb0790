package dataplane

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// muxSizes are the limits the mux program was compiled with
// (bpf/include/limits.h), read from its collection spec rather than copied:
// map sizes from the maps, array lengths and layouts from the BTF of the
// types the maps hold.
type muxSizes struct {
	vips         int // MAX_VIPS: mux_vip_traffic's entries
	portSets     int // port_sets' entries (MAX_VIPS)
	tables       int // MAX_TABLES: instance slots
	serverTable  int // SERVER_TABLE_SIZE: one instance's server words
	vipRecords   int // VIP_RECORDS
	vipRecordLen int // bytes of a VIP record: vip_records' values
	vipFrontBits int // VIP_FRONT_BITS: vip_front has 1 << bits lines
	vipFrontWays int // VIP_FRONT_WAYS: struct vip_front_line's w[]
	serverStats  int // MAX_SERVER_STATS

	portSetRanges int // PORT_SET_RANGES: struct port_set's r[]
	chain         int // BEAMER_MAX_CHAIN: the constant limit_max_chain
	cheetahPicks  int // CHEETAH_MAX_PICKS: struct cheetah_mux_inst's picks[]
	awfd          awfdLayout
}

// awfdLayout is struct awfd_record (bpf/strategy/awfd_select.h): the byte
// offsets of its arrays, their lengths and the record's size.
type awfdLayout struct {
	size                         int
	upper, start, count, servers int // offsets
	maxClasses, maxServers       int
}

// muxLimits reads the sizes once. The embedded object is parsed here as by
// NewMux, which reports an error from it first (so the zero sizes returned
// with an error are never used to size anything).
var muxLimits = sync.OnceValues(func() (muxSizes, error) {
	spec, err := loadMux()
	if err != nil {
		return muxSizes{}, err
	}
	return muxSizesOf(spec)
})

// muxLimit is muxLimits' sizes, for the callers that NewMux's check has
// already vouched for.
func muxLimit() muxSizes {
	s, _ := muxLimits()
	return s
}

func muxSizesOf(spec *ebpf.CollectionSpec) (muxSizes, error) {
	var s muxSizes
	r := specReader{spec: spec}
	s.vips = r.entries("mux_vip_traffic")
	s.portSets = r.entries("port_sets")
	s.tables = r.entries("server_tables")
	s.serverTable = r.innerEntries("server_tables")
	s.vipRecords = r.entries("vip_records")
	s.vipRecordLen = r.valueSize("vip_records")
	s.vipFrontBits = bits.Len(uint(r.entries("vip_front"))) - 1
	s.vipFrontWays, _ = r.array("vip_front_line", "w")
	s.serverStats = r.entries("mux_server_traffic")
	s.portSetRanges, _ = r.array("port_set", "r")
	s.chain = r.constant("limit_max_chain")
	s.cheetahPicks, _ = r.array("cheetah_mux_inst", "picks")
	a := &s.awfd
	a.size = r.size("awfd_record")
	a.maxClasses, a.upper = r.array("awfd_record", "upper")
	_, a.start = r.array("awfd_record", "start")
	_, a.count = r.array("awfd_record", "count")
	a.maxServers, a.servers = r.array("awfd_record", "servers")
	if r.err == nil && s.vipRecordLen < int(unsafe.Sizeof(muxVipInfo{})) {
		r.fail("a VIP record of %d bytes cannot hold struct vip_info's %d", s.vipRecordLen, unsafe.Sizeof(muxVipInfo{}))
	}
	return s, r.err
}

// specReader reads sizes from a collection spec; the first thing missing
// is its error, and every read after it returns 0.
type specReader struct {
	spec *ebpf.CollectionSpec
	err  error
}

func (r *specReader) fail(format string, args ...any) int {
	if r.err == nil {
		r.err = fmt.Errorf("dataplane: program limits: "+format, args...)
	}
	return 0
}

func (r *specReader) entries(m string) int {
	ms, ok := r.spec.Maps[m]
	if !ok || ms.MaxEntries == 0 {
		return r.fail("no map %s", m)
	}
	return int(ms.MaxEntries)
}

func (r *specReader) valueSize(m string) int {
	ms, ok := r.spec.Maps[m]
	if !ok || ms.ValueSize == 0 {
		return r.fail("no map %s", m)
	}
	return int(ms.ValueSize)
}

func (r *specReader) innerEntries(m string) int {
	ms, ok := r.spec.Maps[m]
	if !ok || ms.InnerMap == nil || ms.InnerMap.MaxEntries == 0 {
		return r.fail("no map %s with an inner map", m)
	}
	return int(ms.InnerMap.MaxEntries)
}

func (r *specReader) structType(name string) *btf.Struct {
	var st *btf.Struct
	if r.spec.Types == nil {
		r.fail("no BTF")
		return nil
	}
	if err := r.spec.Types.TypeByName(name, &st); err != nil {
		r.fail("struct %s: %v", name, err)
		return nil
	}
	return st
}

func (r *specReader) size(name string) int {
	st := r.structType(name)
	if st == nil {
		return 0
	}
	return int(st.Size)
}

// array is the length and byte offset of struct name's array field.
func (r *specReader) array(name, field string) (n, offset int) {
	st := r.structType(name)
	if st == nil {
		return 0, 0
	}
	for _, m := range st.Members {
		if m.Name != field {
			continue
		}
		a, ok := btf.UnderlyingType(m.Type).(*btf.Array)
		if !ok || a.Nelems == 0 {
			return r.fail("%s.%s is no array", name, field), 0
		}
		return int(a.Nelems), int(m.Offset.Bytes())
	}
	return r.fail("struct %s has no field %s", name, field), 0
}

// constant is the value of a 32-bit read-only variable.
func (r *specReader) constant(name string) int {
	vs, ok := r.spec.Variables[name]
	var v uint32
	if !ok || !vs.Constant() {
		return r.fail("no constant %s", name)
	}
	if err := vs.Get(&v); err != nil {
		return r.fail("constant %s: %v", name, err)
	}
	return int(v)
}
