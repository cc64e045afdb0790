package ring

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// byteSection is a section of fixed bytes for the codec's own tests: it
// writes body when set, length-prefixed (u8), and its empty form (one zero
// byte) unless noEmpty; it reads a run back into got and fails on a length
// of 255.
type byteSection struct {
	body    []byte
	noEmpty bool
	got     *[]byte
}

func (s byteSection) bytes() ringspi.Bytes {
	if s.body == nil {
		if s.noEmpty {
			return ringspi.Bytes{Empty: true}
		}
		return ringspi.Bytes{Empty: true, Size: 1, Put: func(b []byte) { b[0] = 0 }}
	}
	return ringspi.Bytes{Size: 1 + len(s.body), Put: func(b []byte) { b[0] = byte(len(s.body)); copy(b[1:], s.body) }}
}
func (s byteSection) Delta(*forwarding.Delta) ringspi.Bytes { return s.bytes() }
func (s byteSection) Table(*forwarding.Table) ringspi.Bytes { return s.bytes() }
func (s byteSection) read(r *ringspi.Reader) {
	n := r.Take(1)
	if n == nil {
		return
	}
	if n[0] == 0xff {
		r.Fail(errors.New("length 255 is not a length"))
		return
	}
	*s.got = r.Take(int(n[0]))
}
func (s byteSection) ReadDelta(r *ringspi.Reader, _ *forwarding.Delta) { s.read(r) }
func (s byteSection) ReadTable(r *ringspi.Reader, _ *forwarding.Table) { s.read(r) }

func writeTail(secs []ringspi.Registered) ([]byte, error) {
	size, put, err := tailBytes(secs, func(s ringspi.Section) ringspi.Bytes { return s.Table(nil) })
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	put(b)
	return b, nil
}

// Sections are written up to the last non-empty one, empty ones before it
// in their empty form; an empty section with no empty form cannot come
// before a non-empty one and the payload is refused, not written wrong.
func TestTailSections(t *testing.T) {
	reg := func(ss ...byteSection) []ringspi.Registered {
		out := make([]ringspi.Registered, len(ss))
		for i, s := range ss {
			out[i] = ringspi.Registered{Position: i + 1, Name: string(rune('a' + i)), Section: s}
		}
		return out
	}
	for name, c := range map[string]struct {
		secs []ringspi.Registered
		want string
	}{
		"all empty":        {reg(byteSection{}, byteSection{noEmpty: true}), ""},
		"first only":       {reg(byteSection{body: []byte("xy")}, byteSection{noEmpty: true}), "\x02xy"},
		"second only":      {reg(byteSection{}, byteSection{body: []byte("z"), noEmpty: true}), "\x00\x01z"},
		"both":             {reg(byteSection{body: []byte("xy")}, byteSection{body: []byte("z")}), "\x02xy\x01z"},
		"trailing empties": {reg(byteSection{body: []byte("q")}, byteSection{}, byteSection{}), "\x01q"},
	} {
		got, err := writeTail(c.secs)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.want)
		}
	}
	_, err := writeTail(reg(byteSection{noEmpty: true}, byteSection{body: []byte("z")}))
	if err == nil || !strings.Contains(err.Error(), "section 1 (a) has no empty form") {
		t.Errorf("no empty form before a section: %v", err)
	}
}

// The reader reads the sections a payload carries and stops at its end; a
// damaged section is ErrCorrupt naming the section; bytes past the last
// section this build knows are ErrUnknownSection (and ErrCorrupt), with
// or without sections registered, never a panic.
func TestReadTailSections(t *testing.T) {
	var a, b []byte
	secs := []ringspi.Registered{{Position: 1, Name: "a", Section: byteSection{got: &a}}, {Position: 2, Name: "b", Section: byteSection{got: &b}}}
	read := func(secs []ringspi.Registered, raw string) error {
		a, b = nil, nil
		r := &reader{b: []byte(raw)}
		readTail(r, secs, func(s ringspi.Section, sr *ringspi.Reader) { s.ReadTable(sr, nil) })
		return r.end()
	}
	if err := read(secs, ""); err != nil || a != nil || b != nil {
		t.Errorf("no sections: %v, %q %q", err, a, b)
	}
	if err := read(secs, "\x02xy"); err != nil || !bytes.Equal(a, []byte("xy")) || b != nil {
		t.Errorf("first: %v, %q %q", err, a, b)
	}
	if err := read(secs, "\x00\x01z"); err != nil || len(a) != 0 || !bytes.Equal(b, []byte("z")) {
		t.Errorf("second: %v, %q %q", err, a, b)
	}
	err := read(secs, "\x00\xff")
	if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnknownSection) || !strings.Contains(err.Error(), "section 2 (b): length 255") {
		t.Errorf("damaged second section: %v", err)
	}
	err = read(secs, "\x00\x05z")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section 2 (b): section truncated") {
		t.Errorf("truncated second section: %v", err)
	}
	err = read(secs, "\x00\x01z\x01w")
	if !errors.Is(err, ErrUnknownSection) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "2 bytes after the last section this build reads (section 2 (b))") {
		t.Errorf("a third section: %v", err)
	}
	err = read(nil, "\x01q")
	if !errors.Is(err, ErrUnknownSection) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "(none)") {
		t.Errorf("a section in a build without any: %v", err)
	}
}
