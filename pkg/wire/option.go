package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Option layout constants (docs/wire-format.md).
const (
	OptionType = 0x9e // RFC 4727 experimental: copy 1, class 0, number 30
	// OptionFixed is the option without previous servers: type, length,
	// hop, flags, generation, incarnation, change time.
	OptionFixed = 16
	// MaxPrev is how many previous servers an option can carry: IPv4 has
	// 40 bytes of option room, 16 + 4·6 = 40.
	MaxPrev = 6
	// FlagReturn (UDP): the last of Prev is the bucket's current owner,
	// where a packet no previous owner holds comes back to.
	FlagReturn = 0x01
	// OptionMax is the longest option.
	OptionMax = OptionFixed + 4*MaxPrev
)

// Option is the Beamer IP option: what servers need to daisy-chain a
// packet along the bucket's previous owners.
type Option struct {
	// Hop is how many times the packet was daisy-chained so far (0 from
	// the mux); the next server may only chain it to Prev[Hop] or later.
	Hop   uint8
	Flags uint8 // FlagReturn or 0
	// Generation and Incarnation of the mux's forwarding state: agents
	// compare Incarnation<<32 | Generation as one number.
	Generation  uint32
	Incarnation uint32
	// Changed is the Unix time (controller clock) the bucket last changed
	// owner or was re-stamped; 0 when Prev is empty.
	Changed uint32
	// Prev lists the bucket's previous owners, most recent first (≤ MaxPrev).
	Prev []netip.Addr
}

// Len is the option's length on the wire.
func (o Option) Len() int { return OptionFixed + 4*len(o.Prev) }

// Epoch is the (incarnation, generation) pair as the one number agents
// compare.
func (o Option) Epoch() uint64 { return uint64(o.Incarnation)<<32 | uint64(o.Generation) }

// Marshal writes the option bytes (16 + 4 per previous server).
func (o Option) Marshal() []byte {
	if len(o.Prev) > MaxPrev {
		panic(fmt.Sprintf("wire: %d previous servers, at most %d", len(o.Prev), MaxPrev))
	}
	b := make([]byte, o.Len())
	b[0], b[1], b[2], b[3] = OptionType, byte(o.Len()), o.Hop, o.Flags
	binary.BigEndian.PutUint32(b[4:], o.Generation)
	binary.BigEndian.PutUint32(b[8:], o.Incarnation)
	binary.BigEndian.PutUint32(b[12:], o.Changed)
	for i, p := range o.Prev {
		a := p.As4()
		copy(b[OptionFixed+4*i:], a[:])
	}
	return b
}

// ErrOption is returned for bytes that are not a Beamer option.
var ErrOption = errors.New("wire: not a Beamer option")

// ParseOption reads an option that fills b exactly (the outer header's
// option space): the length must be 16 + 4n with n ≤ MaxPrev and match
// len(b), and the hop must not be past the list (hop ≤ n).
func ParseOption(b []byte) (Option, error) {
	if len(b) < OptionFixed || b[0] != OptionType || int(b[1]) != len(b) || (len(b)-OptionFixed)%4 != 0 || len(b) > OptionMax {
		return Option{}, fmt.Errorf("%w: % x", ErrOption, b[:min(len(b), 2)])
	}
	n := (len(b) - OptionFixed) / 4
	o := Option{
		Hop:         b[2],
		Flags:       b[3],
		Generation:  binary.BigEndian.Uint32(b[4:]),
		Incarnation: binary.BigEndian.Uint32(b[8:]),
		Changed:     binary.BigEndian.Uint32(b[12:]),
	}
	if int(o.Hop) > n {
		return Option{}, fmt.Errorf("%w: hop %d past %d previous servers", ErrOption, o.Hop, n)
	}
	for i := range n {
		o.Prev = append(o.Prev, netip.AddrFrom4([4]byte(b[OptionFixed+4*i:])))
	}
	return o, nil
}
