package ring

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
)

// Kind says whether an object is a delta or a blob.
type Kind uint8

const (
	KindDelta Kind = 1
	KindBlob  Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindDelta:
		return "delta"
	case KindBlob:
		return "blob"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Object header layout (little-endian), HeaderSize bytes at the start of
// chunk 0:
//
//	0  [4]  magic "BMRG"
//	4  u8   format version (2)
//	5  u8   kind (1 delta, 2 blob)
//	6  u8   codec (1 zlib)
//	7  u8   flags (bit 0: resync — this blob begins its incarnation)
//	8  u32  incarnation
//	12 u32  generation
//	16 u32  number of chunks
//	20 u32  payload length (compressed bytes after the header, all chunks)
//	24 u32  raw length (decompressed bytes)
//	28 u32  CRC32C of the payload
//	32 u32  CRC32C of bytes 0–31
const (
	HeaderSize    = 36
	formatVersion = 2
	codecZlib     = 1
	flagResync    = 1
	// maxRaw is the absolute bound on a decompressed payload, whatever
	// the instance: a blob of the largest table fits with room to spare.
	// Readers apply the tighter bound of the instance (see limits).
	maxRaw = 1 << 28
)

var (
	magic  = [4]byte{'B', 'M', 'R', 'G'}
	crc32c = crc32.MakeTable(crc32.Castagnoli)
)

// ErrCorrupt wraps every error about an object that fails its checks.
var ErrCorrupt = errors.New("ring: corrupt object")

// meta is what an object says about itself, and what a reader expects.
type meta struct {
	kind        Kind
	incarnation uint32
	generation  uint32
	resync      bool // a blob that begins its incarnation
}

func (m meta) String() string {
	s := fmt.Sprintf("%v of generation %d, incarnation %d", m.kind, m.generation, m.incarnation)
	if m.resync {
		s += " (resync)"
	}
	return s
}

type header struct {
	meta
	chunks     uint32
	payloadLen uint32
	rawLen     uint32
	payloadCRC uint32
}

func (h *header) marshal() []byte {
	b := make([]byte, HeaderSize)
	copy(b, magic[:])
	b[4], b[5], b[6] = formatVersion, byte(h.kind), codecZlib
	if h.resync {
		b[7] = flagResync
	}
	binary.LittleEndian.PutUint32(b[8:], h.incarnation)
	binary.LittleEndian.PutUint32(b[12:], h.generation)
	binary.LittleEndian.PutUint32(b[16:], h.chunks)
	binary.LittleEndian.PutUint32(b[20:], h.payloadLen)
	binary.LittleEndian.PutUint32(b[24:], h.rawLen)
	binary.LittleEndian.PutUint32(b[28:], h.payloadCRC)
	binary.LittleEndian.PutUint32(b[32:], crc32.Checksum(b[:32], crc32c))
	return b
}

// parseHeader checks a header on its own: checksum, magic, version, codec,
// kind, flags and the absolute size bound. Sizes against the instance and
// the store are checked by limits.check.
func parseHeader(b []byte) (header, error) {
	var h header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if !bytes.Equal(b[:4], magic[:]) {
		return h, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	if got, want := binary.LittleEndian.Uint32(b[32:]), crc32.Checksum(b[:32], crc32c); got != want {
		return h, fmt.Errorf("%w: header checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	if b[4] != formatVersion {
		return h, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, b[4], formatVersion)
	}
	if b[6] != codecZlib {
		return h, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, b[6])
	}
	h = header{
		meta: meta{kind: Kind(b[5]), resync: b[7]&flagResync != 0,
			incarnation: binary.LittleEndian.Uint32(b[8:]), generation: binary.LittleEndian.Uint32(b[12:])},
		chunks:     binary.LittleEndian.Uint32(b[16:]),
		payloadLen: binary.LittleEndian.Uint32(b[20:]),
		rawLen:     binary.LittleEndian.Uint32(b[24:]),
		payloadCRC: binary.LittleEndian.Uint32(b[28:]),
	}
	if h.kind != KindDelta && h.kind != KindBlob {
		return h, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, b[5])
	}
	if b[7]&^flagResync != 0 || (h.resync && h.kind != KindBlob) {
		return h, fmt.Errorf("%w: flags %#x on a %v", ErrCorrupt, b[7], h.kind)
	}
	if h.chunks == 0 || h.rawLen > maxRaw || h.payloadLen > compressBound(maxRaw) {
		return h, fmt.Errorf("%w: implausible header (%d chunks, %d payload bytes, %d raw bytes)", ErrCorrupt, h.chunks, h.payloadLen, h.rawLen)
	}
	return h, nil
}

// compressBound is the most zlib can expand n bytes (stored blocks: 5
// bytes per 16 KiB block at worst, plus the stream's header and trailer).
func compressBound(n uint32) uint32 { return n + n/16384*5 + 5 + 6 + 64 }

// limits bound what a reader allocates for one object, from the instance's
// size and the store's value limit, before it allocates anything.
type limits struct {
	raw   uint32 // decompressed payload
	chunk int    // one stored value
}

// Most bytes one bucket or one server takes in a raw payload, with room for
// the bucket history of payload format changes: a delta bucket is an index
// plus its record, a blob bucket its record only.
const (
	maxBucketBytes = 48
	maxServers     = 1 << 16
	maxServerBytes = serverRecord6 + ringspi.MaxServerBytes // an IPv6 server's record and what sections keep per server
)

// instanceLimits returns the bounds for an instance of b buckets on a store
// whose values are at most chunk bytes.
func instanceLimits(b uint32, chunk int) limits {
	raw := uint64(8) + maxServers*maxServerBytes + uint64(b)*maxBucketBytes
	return limits{raw: uint32(min(raw, maxRaw)), chunk: chunk}
}

// check refuses a header whose sizes cannot be those of this instance on
// this store: every allocation of the reader is bounded by what passes.
func (l limits) check(h header) error {
	if h.rawLen > l.raw {
		return fmt.Errorf("%w: %v claims %d raw bytes, more than this instance's bound %d", ErrCorrupt, h.meta, h.rawLen, l.raw)
	}
	if h.payloadLen > compressBound(h.rawLen) {
		return fmt.Errorf("%w: %v claims %d compressed bytes for %d raw bytes", ErrCorrupt, h.meta, h.payloadLen, h.rawLen)
	}
	total := uint64(h.payloadLen) + HeaderSize
	if uint64(h.chunks) > total || total > uint64(h.chunks)*uint64(l.chunk) {
		return fmt.Errorf("%w: %v claims %d bytes in %d chunks of at most %d bytes", ErrCorrupt, h.meta, total, h.chunks, l.chunk)
	}
	return nil
}

// encodeObject compresses raw and prepends the header. Chunking is the
// caller's business: chunks is filled in by split.
func encodeObject(m meta, raw []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, HeaderSize))
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	payload := out[HeaderSize:]
	h := header{meta: m, payloadLen: uint32(len(payload)), rawLen: uint32(len(raw)),
		payloadCRC: crc32.Checksum(payload, crc32c)}
	copy(out, h.marshal())
	return out, nil
}

// split cuts an encoded object into chunks of at most size bytes and
// records their number in the header.
func split(obj []byte, size int) [][]byte {
	n := (len(obj) + size - 1) / size
	binary.LittleEndian.PutUint32(obj[16:], uint32(n))
	binary.LittleEndian.PutUint32(obj[32:], crc32.Checksum(obj[:32], crc32c))
	chunks := make([][]byte, 0, n)
	for len(obj) > 0 {
		m := min(size, len(obj))
		chunks = append(chunks, obj[:m])
		obj = obj[m:]
	}
	return chunks
}

// decodePayload checks the payload against the header and decompresses it.
// Memory grows only as decompressed bytes really arrive and never past the
// header's raw length, so a stream that expands more than it claims (a
// zlib bomb) costs at most that length.
func decodePayload(h header, payload []byte) ([]byte, error) {
	if uint32(len(payload)) != h.payloadLen {
		return nil, fmt.Errorf("%w: payload of %d bytes, header says %d", ErrCorrupt, len(payload), h.payloadLen)
	}
	if got := crc32.Checksum(payload, crc32c); got != h.payloadCRC {
		return nil, fmt.Errorf("%w: payload checksum %08x, header says %08x", ErrCorrupt, got, h.payloadCRC)
	}
	zr, err := zlib.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	var out bytes.Buffer
	// Start small: a header may lie about rawLen; growth follows the data.
	out.Grow(int(min(h.rawLen, 64<<10)))
	n, err := io.Copy(&out, io.LimitReader(zr, int64(h.rawLen)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
	}
	if n != int64(h.rawLen) {
		return nil, fmt.Errorf("%w: decompressed %d bytes, header says %d", ErrCorrupt, min(n, int64(h.rawLen)+1), h.rawLen)
	}
	// Copy ran to zlib's end of stream, where it checked its Adler-32.
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out.Bytes(), nil
}
