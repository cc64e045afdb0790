package hashsim

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// ScaleRow is one controller operation at the paper's largest instance
// (Beamer §6.4: 64K DIPs, 100 buckets each).
type ScaleRow struct {
	Operation  string  `json:"operation"`
	DIPsBefore int     `json:"dips_before"`
	DIPsAfter  int     `json:"dips_after"`
	Buckets    int     `json:"buckets"`
	Ms         float64 `json:"ms"`
	Changes    int     `json:"changes"`
	// DeltaBytes: the bucket changes at 12 bytes each (index + the packed
	// 64-bit bucket word); DeltaZlibBytes: the same compressed with zlib,
	// as the paper stores generation logs.
	DeltaBytes     int     `json:"delta_bytes"`
	DeltaZlibBytes int     `json:"delta_zlib_bytes"`
	AllocBytes     uint64  `json:"alloc_bytes"` // allocated by the operation
	RulesPerDIP    float64 `json:"rules_per_dip_after"`
}

// Scale times Rebalance for adding and removing each ScaleChanges count of
// DIPs at ScaleDIPs × ScalePerDIP buckets, then defragmentation planning
// and one step on the most fragmented result.
func Scale(c Config) ([]ScaleRow, error) {
	n := c.ScaleDIPs
	all := equalServers(n)
	buckets := n * c.ScalePerDIP
	var rows []ScaleRow
	var worst []forwarding.Bucket
	for _, k := range c.ScaleChanges {
		for _, op := range []struct {
			name          string
			before, after []assign.Server
		}{
			{fmt.Sprintf("add %d", k), all[:n-k], all},
			{fmt.Sprintf("remove %d", k), all, all[k:]},
		} {
			t := make([]forwarding.Bucket, buckets)
			applyChanges(t, assign.Rebalance(t, op.before, 1))
			var ch []forwarding.BucketChange
			row := measure(op.name, func() { ch = assign.Rebalance(t, op.after, 2) })
			applyChanges(t, ch)
			row.DIPsBefore, row.DIPsAfter, row.Buckets = len(op.before), len(op.after), buckets
			row.Changes = len(ch)
			row.DeltaBytes, row.DeltaZlibBytes = deltaSize(ch)
			row.RulesPerDIP = assign.Fragmentation(t)
			rows = append(rows, row)
			if worst == nil || row.RulesPerDIP > assign.Fragmentation(worst) {
				worst = t
			}
		}
	}
	if worst == nil {
		return rows, nil
	}
	var plan *assign.DefragPlan
	var err error
	row := measure("defrag plan", func() { plan, err = assign.PlanDefrag(worst, assign.DefaultDefragParams) })
	if err != nil {
		return nil, err
	}
	row.Buckets, row.RulesPerDIP = buckets, assign.Fragmentation(worst)
	rows = append(rows, row)
	var ch []forwarding.BucketChange
	row = measure("defrag step", func() { ch, err = plan.Step(worst, 3) })
	if err != nil {
		return nil, err
	}
	applyChanges(worst, ch)
	row.Buckets, row.Changes, row.RulesPerDIP = buckets, len(ch), assign.Fragmentation(worst)
	row.DeltaBytes, row.DeltaZlibBytes = deltaSize(ch)
	return append(rows, row), nil
}

func measure(name string, f func()) ScaleRow {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	return ScaleRow{Operation: name, Ms: float64(d.Microseconds()) / 1000, AllocBytes: m1.TotalAlloc - m0.TotalAlloc}
}

// deltaSize encodes the changes as the raw 12-byte records and zlib
// compresses them, to size a generation delta.
func deltaSize(ch []forwarding.BucketChange) (raw, compressed int) {
	buf := make([]byte, 0, 12*len(ch))
	for _, c := range ch {
		buf = binary.LittleEndian.AppendUint32(buf, c.Index)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(c.Bucket.Current)|uint64(c.Bucket.History[0])<<16|uint64(c.Bucket.Changed)<<32)
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(buf) // writes to a bytes.Buffer cannot fail
	w.Close()
	return len(buf), z.Len()
}
