package dataplane

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/beamer-lb/beamer/pkg/dataplane/bpfspec"
	"github.com/cilium/ebpf"
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
	r := bpfspec.Reader{Spec: spec}
	s.vips = r.Entries("mux_vip_traffic")
	s.portSets = r.Entries("port_sets")
	s.tables = r.Entries("server_tables")
	s.serverTable = r.InnerEntries("server_tables")
	s.vipRecords = r.Entries("vip_records")
	s.vipRecordLen = r.ValueSize("vip_records")
	s.vipFrontBits = bits.Len(uint(r.Entries("vip_front"))) - 1
	s.vipFrontWays, _ = r.Array("vip_front_line", "w")
	s.serverStats = r.Entries("mux_server_traffic")
	s.portSetRanges, _ = r.Array("port_set", "r")
	s.chain = r.Constant("limit_max_chain")
	if r.Err == nil && s.vipRecordLen < int(unsafe.Sizeof(muxVipInfo{})) {
		r.Fail("a VIP record of %d bytes cannot hold struct vip_info's %d", s.vipRecordLen, unsafe.Sizeof(muxVipInfo{}))
	}
	return s, r.Err
}
