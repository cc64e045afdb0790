package classes

import (
	"errors"
	"testing"
)

// FuzzDecode: any bytes in the record key decode to a valid record or to
// ErrRecord, never a panic; a decoded record selects only servers it lists
// and re-encodes to a record that decodes the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"seq":1,"at_ms":0,"classes":[[1026],[1025]],"upper":[1,3],"idle":[1027]}`))
	f.Add([]byte(`{"seq":2,"classes":[[],[],[],[1025,1030]],"upper":[0,0,0,8]}`))
	f.Add([]byte(`{"seq":1,"classes":[[1025],[1025]],"upper":[1,3]}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("error %v is not ErrRecord", err)
			}
			return
		}
		for _, h := range []uint32{0, 1, 1 << 31, ^uint32(0), 0x12345678} {
			id := r.Select(h)
			if r.Empty() != (id == 0) || (id != 0 && r.Weight(id) == 0) {
				t.Fatalf("hash %#x selects %d, not a member of a class of %+v", h, id, r)
			}
		}
		again, err := r.Encode()
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
	})
}
