package cookie

import (
	"crypto/sha256"
	"encoding/hex"
)

// Fingerprint names a key without revealing it: the first 8 bytes of the
// SHA-256 of a label and the key, as 16 hex digits. Read APIs (`ctl show`,
// `ctl list`, logs) print it instead of the key, so operators can compare
// keys across hosts.
func (k Key) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte("beamer cheetah key fingerprint\x00"))
	b, _ := k.MarshalText()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// KeyView is one key slot as read APIs show it.
type KeyView struct {
	ID          uint8  `json:"id"`
	Fingerprint string `json:"fingerprint"`
	Current     bool   `json:"current"`
}

// View is the keys as read APIs show them: slot, fingerprint, which one
// is current; never the key bytes.
func (ks Keys) View() []KeyView {
	v := make([]KeyView, len(ks.Keys))
	for i, k := range ks.Keys {
		v[i] = KeyView{ID: uint8(i), Fingerprint: k.Fingerprint(), Current: uint8(i) == ks.Current}
	}
	return v
}
