package controller

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestRingDamageRepaired writes garbage into the mux ring through the
// store's own client — on embedded etcd and on a ZooKeeper server — under
// a live controller and a live mux follower (issue 11, store rows: also a
// header claiming 256 MiB and a zlib bomb; their memory bound is measured
// by pkg/controlplane/ring's TestHostileSizesBounded), then
// asks the controller for an operation. Every time: the ctl request
// completes, the controller repairs the ring at a new incarnation and logs
// what it found, the mux never goes back or sees one pair with two
// contents, and it ends equal to the store bucket for bucket.
func TestRingDamageRepaired(t *testing.T) {
	rows := []struct {
		name   string
		damage func(h *damageHarness, p ring.Pair)
		found  string // in the controller's repair log line
	}{
		{"corrupt latest blob", func(h *damageHarness, p ring.Pair) {
			key := h.blobChunk(h.pointer(h.k.LatestBlob()))
			v := bytes.Clone(h.get(key))
			for i := ring.HeaderSize; i < len(v); i += 7 {
				v[i] ^= 0x5a
			}
			h.put(key, v)
			// The next publication may carry a blob that hides it: the
			// periodic full check must find it first.
			h.waitLog("ring repaired", "checksum")
		}, "checksum"},
		{"truncated latest blob", func(h *damageHarness, p ring.Pair) {
			key := h.blobChunk(h.pointer(h.k.LatestBlob()))
			v := h.get(key)
			h.put(key, v[:len(v)/2])
			h.waitLog("ring repaired", "payload of")
		}, "payload of"},
		{"skipped generation", func(h *damageHarness, p ring.Pair) {
			h.put(h.k.LatestGen(), []byte(ring.Pair{Incarnation: p.Incarnation, Generation: p.Generation + 2}.String()))
		}, "latest-gen"},
		{"latest-gen deleted", func(h *damageHarness, p ring.Pair) {
			h.del(h.k.LatestGen())
		}, "latest-gen"},
		{"latest-gen a megabyte of garbage", func(h *damageHarness, p ring.Pair) {
			h.put(h.k.LatestGen(), bytes.Repeat([]byte("x"), 1_000_000))
		}, "(1000000 bytes)"},
		{"latest-blob after latest-gen", func(h *damageHarness, p ring.Pair) {
			h.put(h.k.LatestBlob(), []byte(ring.Pair{Incarnation: p.Incarnation, Generation: p.Generation + 5}.String()))
		}, "latest-blob"},
		{"delta header claiming 256 MiB", func(h *damageHarness, p ring.Pair) {
			next := ring.Pair{Incarnation: p.Incarnation, Generation: p.Generation + 1}
			h.put(h.k.Gen(next.Generation)+"/delta/000000", lyingHeader(next, 256<<20))
			h.put(h.k.LatestGen(), []byte(next.String()))
		}, "claims"},
		{"zlib bomb", func(h *damageHarness, p ring.Pair) {
			next := ring.Pair{Incarnation: p.Incarnation, Generation: p.Generation + 1}
			h.put(h.k.Gen(next.Generation)+"/delta/000000", zlibBomb(next, 64<<20, 1<<20))
			h.put(h.k.LatestGen(), []byte(next.String()))
		}, "decompressed"},
		{"unpublished delta of a failed attempt", func(h *damageHarness, p ring.Pair) {
			h.failedAttempt()
			// Invisible to the pointers: the periodic full check finds it.
			h.waitLog("ring repaired", "above latest-gen")
		}, "above latest-gen"},
	}
	backends(t, func(t *testing.T, open func() store.Store) {
		for _, row := range rows {
			t.Run(strings.ReplaceAll(row.name, " ", "_"), func(t *testing.T) {
				h := newDamageHarness(t, open, 3)
				before := h.pair()
				row.damage(h, before)
				if err := h.submit(Request{Op: OpAddDIP, Instance: "web", ID: 1040, Addr: dipAddr(1040), Weight: 1}); err != nil {
					t.Fatalf("ctl add-dip after the damage: %v", err)
				}
				line := h.waitLog("ring repaired", row.found)
				tab := h.converged(row.name)
				if tab.Incarnation <= before.Incarnation {
					t.Fatalf("store at %d@%d after repair, incarnation not above %v", tab.Generation, tab.Incarnation, before)
				}
				if tab.Servers[1040].State != forwarding.Active {
					t.Fatalf("the request after the damage is not in the ring: %+v", tab.Servers)
				}
				if _, ok := tab.Servers[1099]; ok {
					t.Fatal("the unpublished attempt's server reached the ring")
				}
				for _, l := range strings.Split(h.log(), "\n") {
					if len(l) > 2000 {
						t.Fatalf("controller log line of %d bytes: %.200s…", len(l), l)
					}
				}
				t.Logf("%v → %d@%d: %s", before, tab.Generation, tab.Incarnation, line)
			})
		}
		// On the same store server: one ZooKeeper start for both.
		t.Run("restored_backup", func(t *testing.T) { restoredBackup(t, open) })
	})
}

// restoredBackup restores the store from a backup taken two generations
// earlier (issue 11, first row) under a live controller, a running mux and
// a mux paused during the restore and resumed after the next publication
// (second row): neither goes back, nothing forks, both end equal to the
// store, which the controller moved to a new incarnation.
func restoredBackup(t *testing.T, open func() store.Store) {
	h := newDamageHarness(t, open, 2)
	b := h.backup()
	h.addDIP(1027)
	h.addDIP(1028)
	paused := &muxModel{t: t, forks: h.forks}
	pf := ring.NewFollower(h.st, h.k, ring.FollowerOptions{})
	tab, _, err := pf.Load(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	paused.Replace(tab)
	newest := h.converged("before the restore", paused)
	h.restore(b)
	h.waitLog("ring repaired", "published")
	h.addDIP(1029)
	after := h.converged("after the restore")
	if after.Incarnation <= newest.Incarnation {
		t.Fatalf("store at %d@%d after the restore, not above %d@%d", after.Generation, after.Incarnation, newest.Generation, newest.Incarnation)
	}
	if _, err := pf.CatchUp(h.ctx, paused); err != nil {
		t.Fatalf("paused mux resumed: %v", err)
	}
	h.converged("paused mux resumed", paused)
}

// blobChunk is the first chunk of the blob of generation g.
func (h *damageHarness) blobChunk(p ring.Pair) string { return h.k.Gen(p.Generation) + "/blob/000000" }

func (h *damageHarness) pointer(key string) ring.Pair {
	h.t.Helper()
	v := string(h.get(key))
	g, i, _ := strings.Cut(v, "@")
	var p ring.Pair
	if _, err := fmtSscan(g, &p.Generation); err != nil {
		h.t.Fatalf("pointer %q: %v", v, err)
	}
	if _, err := fmtSscan(i, &p.Incarnation); err != nil {
		h.t.Fatalf("pointer %q: %v", v, err)
	}
	return p
}

// lyingHeader is a well-formed object header (checksum right) of a delta
// claiming size compressed and raw bytes, with no payload after it.
func lyingHeader(p ring.Pair, size uint32) []byte {
	b := make([]byte, ring.HeaderSize)
	copy(b, "BMRG")
	b[4], b[5], b[6] = 2, 1, 1
	binary.LittleEndian.PutUint32(b[8:], p.Incarnation)
	binary.LittleEndian.PutUint32(b[12:], p.Generation)
	binary.LittleEndian.PutUint32(b[16:], 1)
	binary.LittleEndian.PutUint32(b[20:], size)
	binary.LittleEndian.PutUint32(b[24:], size)
	binary.LittleEndian.PutUint32(b[32:], crc32.Checksum(b[:32], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// zlibBomb is a delta object, checksums right, whose payload is n zero
// bytes compressed (64 MiB → 65 KB) and whose header claims raw bytes.
func zlibBomb(p ring.Pair, n int64, raw uint32) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	io.Copy(zw, io.LimitReader(zeroReader{}, n))
	zw.Close()
	obj := lyingHeader(p, raw)
	binary.LittleEndian.PutUint32(obj[20:], uint32(z.Len()))
	binary.LittleEndian.PutUint32(obj[28:], crc32.Checksum(z.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	binary.LittleEndian.PutUint32(obj[32:], crc32.Checksum(obj[:32], crc32.MakeTable(crc32.Castagnoli)))
	return append(obj, z.Bytes()...)
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// failedAttempt publishes, as a deposed controller would, a generation
// giving every bucket to server 1099 whose pointer commit fails: its delta
// stays above latest-gen.
func (h *damageHarness) failedAttempt() {
	h.t.Helper()
	w, err := ring.Open(h.ctx, h.st, h.k, ring.WriterOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur := w.Table()
	d := &forwarding.Delta{Generation: cur.Generation + 1,
		Servers: []forwarding.ServerChange{{ID: 1099, Server: forwarding.Server{Addr: dipAddr(1099), State: forwarding.Active}}}}
	for i := range cur.Buckets {
		d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: 1099}})
	}
	for budget := 1; ; budget++ {
		crash := storetest.NewCrashing(h.st, budget)
		w, err := ring.Open(h.ctx, crash, h.k, ring.WriterOptions{BlobEvery: 1 << 30})
		if err != nil {
			h.t.Fatal(err)
		}
		w.Publish(h.ctx, d)
		names, err := h.st.Children(h.ctx, h.k.Gen(d.Generation))
		if err != nil {
			h.t.Fatal(err)
		}
		if len(names) > 0 {
			h.t.Logf("attempt left %v of generation %d after %d commits", names, d.Generation, budget)
			return
		}
		if budget > 10 {
			h.t.Fatal("no attempt left an object behind")
		}
	}
}

func fmtSscan(s string, v *uint32) (int, error) { return fmt.Sscan(s, v) }
