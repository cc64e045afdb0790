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
	OptionLen  = 16
	// FlagChained marks a packet that was daisy-chained once already.
	FlagChained = 0x01
)

// Option is the Beamer IP option: what a server needs to daisy-chain.
type Option struct {
	Flags      uint8
	Previous   netip.Addr // previous owner of the bucket; invalid or 0.0.0.0 = none
	Changed    uint32     // Unix seconds the bucket changed owner; 0 = none
	Generation uint32     // generation of the mux's forwarding state
}

// Chained reports whether the packet was already daisy-chained.
func (o Option) Chained() bool { return o.Flags&FlagChained != 0 }

// HasPrevious reports whether the option names a previous server.
func (o Option) HasPrevious() bool { return o.Previous.IsValid() && !o.Previous.IsUnspecified() }

// Marshal writes the 16 option bytes.
func (o Option) Marshal() []byte {
	b := make([]byte, OptionLen)
	b[0], b[1], b[2] = OptionType, OptionLen, o.Flags
	if o.HasPrevious() {
		a := o.Previous.As4()
		copy(b[4:8], a[:])
	}
	binary.BigEndian.PutUint32(b[8:], o.Changed)
	binary.BigEndian.PutUint32(b[12:], o.Generation)
	return b
}

// ErrOption is returned for bytes that are not a Beamer option.
var ErrOption = errors.New("wire: not a Beamer option")

// ParseOption reads the 16 option bytes.
func ParseOption(b []byte) (Option, error) {
	if len(b) < OptionLen || b[0] != OptionType || b[1] != OptionLen {
		return Option{}, fmt.Errorf("%w: % x", ErrOption, b[:min(len(b), 2)])
	}
	o := Option{
		Flags:      b[2],
		Previous:   netip.AddrFrom4([4]byte(b[4:8])),
		Changed:    binary.BigEndian.Uint32(b[8:]),
		Generation: binary.BigEndian.Uint32(b[12:]),
	}
	return o, nil
}
