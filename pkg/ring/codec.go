package ring

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
//	4  u8   format version (1)
//	5  u8   kind (1 delta, 2 blob)
//	6  u8   codec (1 zlib)
//	7  u8   reserved, 0
//	8  u32  generation
//	12 u32  number of chunks
//	16 u32  payload length (compressed bytes after the header, all chunks)
//	20 u32  raw length (decompressed bytes)
//	24 u32  CRC32C of the payload
//	28 u32  CRC32C of bytes 0–27
const (
	HeaderSize    = 32
	formatVersion = 1
	codecZlib     = 1
	// maxRaw bounds the decompressed size a reader accepts: a blob of the
	// largest table (2^24 buckets × 8 bytes + 65 536 servers × 8 bytes)
	// fits with room to spare; anything larger is corrupt.
	maxRaw = 1 << 28
)

var (
	magic  = [4]byte{'B', 'M', 'R', 'G'}
	crc32c = crc32.MakeTable(crc32.Castagnoli)
)

// ErrCorrupt wraps every error about an object that fails its checks.
var ErrCorrupt = errors.New("ring: corrupt object")

type header struct {
	kind       Kind
	generation uint32
	chunks     uint32
	payloadLen uint32
	rawLen     uint32
	payloadCRC uint32
}

func (h *header) marshal() []byte {
	b := make([]byte, HeaderSize)
	copy(b, magic[:])
	b[4], b[5], b[6] = formatVersion, byte(h.kind), codecZlib
	binary.LittleEndian.PutUint32(b[8:], h.generation)
	binary.LittleEndian.PutUint32(b[12:], h.chunks)
	binary.LittleEndian.PutUint32(b[16:], h.payloadLen)
	binary.LittleEndian.PutUint32(b[20:], h.rawLen)
	binary.LittleEndian.PutUint32(b[24:], h.payloadCRC)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32c))
	return b
}

func parseHeader(b []byte) (header, error) {
	var h header
	if len(b) < HeaderSize {
		return h, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if !bytes.Equal(b[:4], magic[:]) {
		return h, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	if got, want := binary.LittleEndian.Uint32(b[28:]), crc32.Checksum(b[:28], crc32c); got != want {
		return h, fmt.Errorf("%w: header checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	if b[4] != formatVersion {
		return h, fmt.Errorf("%w: format version %d, this mux reads %d", ErrCorrupt, b[4], formatVersion)
	}
	if b[6] != codecZlib {
		return h, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, b[6])
	}
	h = header{
		kind:       Kind(b[5]),
		generation: binary.LittleEndian.Uint32(b[8:]),
		chunks:     binary.LittleEndian.Uint32(b[12:]),
		payloadLen: binary.LittleEndian.Uint32(b[16:]),
		rawLen:     binary.LittleEndian.Uint32(b[20:]),
		payloadCRC: binary.LittleEndian.Uint32(b[24:]),
	}
	if h.kind != KindDelta && h.kind != KindBlob {
		return h, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, b[5])
	}
	if h.chunks == 0 || h.rawLen > maxRaw || h.payloadLen > maxRaw {
		return h, fmt.Errorf("%w: implausible header (%d chunks, %d payload bytes, %d raw bytes)", ErrCorrupt, h.chunks, h.payloadLen, h.rawLen)
	}
	return h, nil
}

// encodeObject compresses raw and prepends the header. Chunking is the
// caller's business: chunks is filled in by split.
func encodeObject(kind Kind, gen uint32, raw []byte, level int) ([]byte, error) {
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
	h := header{kind: kind, generation: gen, payloadLen: uint32(len(payload)), rawLen: uint32(len(raw)),
		payloadCRC: crc32.Checksum(payload, crc32c)}
	copy(out, h.marshal())
	return out, nil
}

// split cuts an encoded object into chunks of at most size bytes and
// records their number in the header.
func split(obj []byte, size int) [][]byte {
	n := (len(obj) + size - 1) / size
	binary.LittleEndian.PutUint32(obj[12:], uint32(n))
	binary.LittleEndian.PutUint32(obj[28:], crc32.Checksum(obj[:28], crc32c))
	chunks := make([][]byte, 0, n)
	for len(obj) > 0 {
		m := min(size, len(obj))
		chunks = append(chunks, obj[:m])
		obj = obj[m:]
	}
	return chunks
}

// decodePayload checks the payload against the header and decompresses it.
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
	raw := make([]byte, h.rawLen)
	if _, err := io.ReadFull(zr, raw); err != nil {
		return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
	}
	// Reading to EOF makes zlib verify its Adler-32 and proves the stream
	// holds no more than rawLen bytes.
	if n, err := io.Copy(io.Discard, io.LimitReader(zr, 1)); n != 0 || err != nil {
		return nil, fmt.Errorf("%w: decompressed data longer than %d bytes or bad trailer (%v)", ErrCorrupt, h.rawLen, err)
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return raw, nil
}
