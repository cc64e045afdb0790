package cookie

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// Cookie layout (bpf/include/cheetah_cookie.h).
const (
	IDBits = 15
	// MaxID is the largest server slot a cookie can name.
	MaxID = 1<<IDBits - 1
)

// Key is one obfuscation key: 128 bits, mixed into the three hashed words
// and the seed.
type Key [4]uint32

// NewKey draws a key from the system's random source.
func NewKey() (Key, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Key{}, err
	}
	var k Key
	for i := range k {
		k[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return k, nil
}

// String is the key as 32 hex digits.
func (k Key) String() string {
	var b [16]byte
	for i, w := range k {
		binary.BigEndian.PutUint32(b[4*i:], w)
	}
	return hex.EncodeToString(b[:])
}

// ParseKey reads the 32 hex digits String writes.
func ParseKey(s string) (Key, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return Key{}, fmt.Errorf("cheetah key of %d characters: want 32 hex digits (the key itself is not repeated here: it is a secret)", len(s))
	}
	var k Key
	for i := range k {
		k[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return k, nil
}

// MarshalText and UnmarshalText keep keys readable in JSON and YAML.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a key written by MarshalText.
func (k *Key) UnmarshalText(b []byte) error {
	v, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Mask is the keyed hash of a connection's 4-tuple in the client → VIP
// direction (wire.Flow as the mux sees it).
func Mask(k Key, f wire.Flow) uint32 {
	ports := uint32(f.SrcPort)<<16 | uint32(f.DstPort)
	return wire.JHash3(wire.AddrWord(f.Src.As4())^k[0], wire.AddrWord(f.Dst.As4())^k[1], ports^k[2], k[3])
}

// Cookie is the 16-bit cookie naming server slot id under key kid.
func Cookie(id uint16, kid uint8, mask uint32) uint16 {
	return uint16(kid&1)<<IDBits | (id^uint16(mask))&MaxID
}

// KeyID is the key id a cookie was made with.
func KeyID(cookie uint16) uint8 { return uint8(cookie >> IDBits) }

// ID is the server slot a cookie names, given the mask of its key.
func ID(cookie uint16, mask uint32) uint16 { return (cookie ^ uint16(mask)) & MaxID }

// Keys are an instance's two key slots and which one new connections use.
type Keys struct {
	Current uint8  `json:"current"`
	Keys    [2]Key `json:"keys"`
}

// Decode is the mux's reading of a TSecr: the key id and the server slot
// the echoed cookie names for flow f.
func (ks Keys) Decode(tsecr uint32, f wire.Flow) (id uint16, kid uint8) {
	c := EchoedCookie(tsecr)
	kid = KeyID(c)
	return ID(c, Mask(ks.Keys[kid], f)), kid
}

// Encode is the server's cookie for flow f under key kid.
func (ks Keys) Encode(id uint16, kid uint8, f wire.Flow) uint16 {
	return Cookie(id, kid, Mask(ks.Keys[kid&1], f))
}
