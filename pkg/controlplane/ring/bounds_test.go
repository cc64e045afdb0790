package ring

import (
	"bytes"
	"compress/zlib"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"testing"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// zlibBomb compresses n zero bytes (256 MiB → about 261 KB, issue 11).
func zlibBomb(t *testing.T, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	if _, err := io.Copy(zw, io.LimitReader(zeros{}, n)); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bombObject is an object with a valid header and checksums around payload,
// claiming raw bytes.
func bombObject(m meta, payload []byte, raw uint32) []byte {
	h := header{meta: m, chunks: 1, payloadLen: uint32(len(payload)), rawLen: raw, payloadCRC: crc32.Checksum(payload, crc32c)}
	return append(h.marshal(), payload...)
}

// TestHostileSizesBounded stores, as the next generation of a 600-bucket
// instance, objects that lie about their size: a header alone claiming
// 256 MiB, a zlib bomb of 256 MiB of zeros claiming 256 MiB, and the same
// bomb claiming 1000 bytes and 1 MiB (within the instance's bound, so
// decompression itself must stop). Each is refused as corrupt, and reading it
// allocates a few megabytes at most — not what it claims (issue 11: RSS
// 40 MB → 820 MB per retry, 1.09 GB).
func TestHostileSizesBounded(t *testing.T) {
	ctx := storetest.Context(t)
	k, w := newRing(t, 600, WriterOptions{})
	next := Pair{w.Pair().Incarnation, w.Pair().Generation + 1}
	bomb := zlibBomb(t, 256<<20)
	t.Logf("bomb: %d compressed bytes for 256 MiB", len(bomb))
	m := meta{kind: KindDelta, incarnation: next.Incarnation, generation: next.Generation}
	cases := map[string][]byte{
		"header claiming 256 MiB": bombObject(m, nil, 256<<20)[:HeaderSize],
		"bomb claiming 256 MiB":   bombObject(m, bomb, 256<<20),
		"bomb claiming 1000 B":    bombObject(m, bomb, 1000),
		// Within every header bound: decompression itself must stop.
		"bomb claiming 1 MiB": bombObject(m, bomb, 1<<20),
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			// The header-only case lies about its payload length too.
			if len(obj) == HeaderSize {
				h, _ := parseHeader(bombObject(m, make([]byte, 0), 256<<20))
				h.payloadLen = 256 << 20
				obj = h.marshal()
			}
			if err := store.DeleteTree(ctx, shared, k.Gen(next.Generation)); err != nil {
				t.Fatal(err)
			}
			if err := shared.Commit(ctx, store.Put(chunkKey(k.objectDir(next.Generation, KindDelta), 0), obj),
				store.Put(k.LatestGen(), formatPointer(next))); err != nil {
				t.Fatal(err)
			}
			var err error
			n := allocated(func() { _, _, _, err = load(ctx, shared, k) })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("load: %v, want ErrCorrupt", err)
			}
			if n > 16<<20 { // far below any claim; other goroutines of the process count too
				t.Fatalf("reading it allocated %d bytes", n)
			}
			t.Logf("refused after allocating %d KB: %v", n>>10, err)
		})
	}
}

// TestQuoteBounded: a megabyte value is quoted by a 32-byte prefix.
func TestQuoteBounded(t *testing.T) {
	_, err := parsePointer(bytes.Repeat([]byte("9"), 1<<20))
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
	}
	t.Log(err)
}
