package forwarding

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
)

// ServerID names a server within one instance. Valid ids are 1025–65535: the
// id doubles as the TCP port MPTCP clients use for secondary subflows, and
// ports up to 1024 are reserved for the services themselves.
type ServerID uint16

const (
	// NoServer marks an absent previous owner (and is never a valid id).
	NoServer ServerID = 0
	// MinServerID is the smallest valid server id.
	MinServerID ServerID = 1025
	// MaxServerID is the largest valid server id.
	MaxServerID ServerID = 65535
)

// Valid reports whether id is in the range servers may use.
func (id ServerID) Valid() bool { return id >= MinServerID }

// MaxChain is how many previous owners of a bucket the data plane can name:
// the Beamer IPv4 option is 16 bytes plus 4 per previous owner, and IPv4
// leaves 40 bytes of option room (16 + 4·6 = 40).
const MaxChain = 6

// Chain lists previous owners of a bucket, most recent first. Entries after
// the first NoServer are NoServer too (Validate checks it), so the zero value
// is the empty chain and comparing chains with == is meaningful.
type Chain [MaxChain]ServerID

// Len is the number of previous owners in c.
func (c Chain) Len() int {
	for i, id := range c {
		if id == NoServer {
			return i
		}
	}
	return MaxChain
}

// Contains reports whether id is one of c's previous owners.
func (c Chain) Contains(id ServerID) bool {
	for _, x := range c[:c.Len()] {
		if x == id {
			return true
		}
	}
	return false
}

// Bucket is the ownership record of one bucket.
type Bucket struct {
	// Current is the owner: new connections of this bucket go here.
	Current ServerID
	// History lists the distinct previous owners that may still hold
	// connections of this bucket, most recent first; never Current. Servers
	// it names chain those connections back along it (docs/wire-format.md).
	History Chain
	// Changed is the Unix time (controller clock, seconds) of the latest
	// move of the bucket, or of the controller's latest re-stamp of its
	// history while an old owner still holds connections; 0 if never moved.
	Changed uint32
}

// ServerState tells how a server id may be used.
type ServerState uint8

const (
	// Active servers own buckets and accept MPTCP secondary subflows.
	Active ServerState = 1
	// Retired servers own no bucket any more but are still named as the
	// previous owner of buckets whose chaining window is open, so packets of
	// their remaining connections can be daisy-chained back to them (Beamer),
	// or keep receiving the connections a mux remembers for them (Maglev).
	Retired ServerState = 2
	// Down servers failed their health checks: they own no bucket, and a
	// Maglev mux stops sending the connections it remembers for them.
	Down ServerState = 3
)

func (s ServerState) String() string {
	switch s {
	case Active:
		return "active"
	case Retired:
		return "retired"
	case Down:
		return "down"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Server is one entry of the server-id table.
type Server struct {
	Addr  netip.Addr // address the mux encapsulates to (the DIP), of the instance's family
	State ServerState
}

// Pack encodes a server in the 64-bit word the BPF programs read: bytes
// 0–3 the IPv4 address in network order, byte 4 the state, bytes 5–7 zero.
// An IPv6 server's word holds the last four bytes of its address (the data
// plane keeps the whole address beside it, pkg/dataplane/servers6.go), so
// UnpackServer gives back IPv4 servers only.
func (s Server) Pack() uint64 {
	var a [4]byte
	if s.Addr.Is4() {
		a = s.Addr.As4()
	} else if s.Addr.IsValid() {
		a = [4]byte(s.Addr.AsSlice()[12:16])
	}
	return uint64(a[0]) | uint64(a[1])<<8 | uint64(a[2])<<16 | uint64(a[3])<<24 | uint64(s.State)<<32
}

// UnpackServer is the inverse of Pack; ok is false for an empty slot.
func UnpackServer(w uint64) (s Server, ok bool) {
	if w == 0 {
		return Server{}, false
	}
	a := [4]byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24)}
	return Server{Addr: netip.AddrFrom4(a), State: ServerState(w >> 32)}, true
}

// Table is the complete forwarding state of one instance at one generation.
type Table struct {
	// Incarnation is the Unix time (controller clock) at which the current
	// incarnation of the instance's ring began; (Incarnation, Generation)
	// pairs are never reused (docs/control-plane.md).
	Incarnation uint32
	Generation  uint32
	Buckets     []Bucket
	Servers     map[ServerID]Server
	// MCT is Prism's migrated-connection table (mct.go); nil for the other
	// strategies.
	MCT map[uint64]ServerID
	// Cheetah is the cheetah strategy's keys and loads (cheetah_state.go);
	// nil for the other strategies.
	Cheetah *CheetahState
}

// NewTable returns generation 0 of a table with n unowned buckets.
func NewTable(n int) *Table {
	return &Table{Buckets: make([]Bucket, n), Servers: map[ServerID]Server{}}
}

// Clone returns a deep copy of t.
func (t *Table) Clone() *Table {
	c := &Table{Incarnation: t.Incarnation, Generation: t.Generation, Buckets: append([]Bucket(nil), t.Buckets...), Servers: make(map[ServerID]Server, len(t.Servers))}
	for id, s := range t.Servers {
		c.Servers[id] = s
	}
	if t.MCT != nil {
		c.MCT = maps.Clone(t.MCT)
	}
	c.Cheetah = t.Cheetah.Clone()
	return c
}

// BucketChange sets one bucket.
type BucketChange struct {
	Index  uint32
	Bucket Bucket
}

// ServerChange sets (or, with Remove, deletes) one server-id entry.
type ServerChange struct {
	ID     ServerID
	Server Server
	Remove bool
}

// Delta is what one generation changes. Server changes are applied before
// MCT changes and those before bucket changes, so a delta may add a server
// and give it buckets at once, and a bucket never moves before the MCT
// entries that keep its connections where they are.
type Delta struct {
	Generation uint32
	Servers    []ServerChange
	Buckets    []BucketChange
	MCT        []MCTChange
	// Cheetah, when set, replaces the table's Cheetah state whole.
	Cheetah *CheetahState
}

// Errors returned by Apply and Validate.
var (
	ErrGeneration = errors.New("forwarding: delta is not for the next generation")
	ErrInvalid    = errors.New("forwarding: invalid table")
)

// Check reports whether d can be applied to t, without changing t. A mux
// calls it before touching its kernel maps, so a bad delta is never applied
// halfway.
func (t *Table) Check(d *Delta) error {
	if d.Generation != t.Generation+1 {
		return fmt.Errorf("%w: table at %d, delta for %d", ErrGeneration, t.Generation, d.Generation)
	}
	servers := func(id ServerID) (Server, bool) { s, ok := t.Servers[id]; return s, ok }
	pending := map[ServerID]*ServerChange{}
	family := t.family()
	for i := range d.Servers {
		c := &d.Servers[i]
		if !c.ID.Valid() {
			return fmt.Errorf("%w: server id %d outside %d–%d", ErrInvalid, c.ID, MinServerID, MaxServerID)
		}
		if !c.Remove {
			if err := checkServer(c.Server); err != nil {
				return fmt.Errorf("%w: server %d: %v", ErrInvalid, c.ID, err)
			}
			if f := FamilyOf(c.Server.Addr); family == 0 {
				family = f
			} else if f != family {
				return fmt.Errorf("%w: server %d at %v is %v in a table of %v servers (one family per instance)", ErrInvalid, c.ID, c.Server.Addr, f, family)
			}
		}
		pending[c.ID] = c
	}
	lookup := func(id ServerID) (Server, bool) {
		if c, ok := pending[id]; ok {
			return c.Server, !c.Remove
		}
		return servers(id)
	}
	for _, c := range d.Buckets {
		if int(c.Index) >= len(t.Buckets) {
			return fmt.Errorf("%w: bucket %d outside table of %d", ErrInvalid, c.Index, len(t.Buckets))
		}
		if err := checkBucket(c.Bucket, lookup); err != nil {
			return fmt.Errorf("%w: bucket %d: %v", ErrInvalid, c.Index, err)
		}
	}
	if err := t.checkMCT(d, lookup); err != nil {
		return err
	}
	if d.Cheetah != nil {
		if err := d.Cheetah.Check(); err != nil {
			return err
		}
	}
	return t.checkRemovals(d)
}

// family is the family of the table's servers (Validate keeps them one),
// 0 when it has none.
func (t *Table) family() Family {
	for _, s := range t.Servers {
		return FamilyOf(s.Addr)
	}
	return 0
}

// checkRemovals makes sure no bucket, as the delta leaves it, still names a
// server the delta removes or retires as its owner. It runs on every delta
// that retires or removes a server, at the controller and at every mux, over
// all B buckets (6.4M at the paper's scale): flat arrays, no map per bucket.
func (t *Table) checkRemovals(d *Delta) error {
	const removed, retired = 1, 2 // gone[id]
	var gone []uint8
	why := map[ServerID]string{}
	for _, c := range d.Servers {
		if !c.Remove && c.Server.State == Active {
			continue
		}
		if gone == nil {
			gone = make([]uint8, 1<<16)
		}
		if c.Remove {
			gone[c.ID], why[c.ID] = removed, "removed"
		} else {
			gone[c.ID], why[c.ID] = retired, c.Server.State.String()
		}
	}
	if gone == nil {
		return nil
	}
	for id := range t.mctNames(d) {
		if gone[id] == removed {
			return fmt.Errorf("%w: an MCT entry still names removed server %d", ErrInvalid, id)
		}
	}
	// The bucket the delta leaves at i: its last change of i (Apply's
	// order), else the table's. Violations are reported lowest index first.
	bad := -1
	var badErr error
	note := func(i int, b Bucket) {
		if bad >= 0 && i > bad {
			return
		}
		if gone[b.Current] != 0 {
			bad, badErr = i, fmt.Errorf("%w: bucket %d is still owned by %s server %d", ErrInvalid, i, why[b.Current], b.Current)
			return
		}
		for _, p := range b.History[:b.History.Len()] {
			if gone[p] == removed {
				bad, badErr = i, fmt.Errorf("%w: bucket %d still names removed server %d as previous owner", ErrInvalid, i, p)
				return
			}
		}
	}
	changed := make([]uint64, (len(t.Buckets)+63)/64)
	for j := len(d.Buckets) - 1; j >= 0; j-- {
		i := d.Buckets[j].Index
		if changed[i/64]&(1<<(i%64)) == 0 {
			changed[i/64] |= 1 << (i % 64)
			note(int(i), d.Buckets[j].Bucket)
		}
	}
	for i := range t.Buckets {
		if changed[i/64]&(1<<(i%64)) == 0 {
			note(i, t.Buckets[i])
		}
	}
	return badErr
}

// Apply checks d and applies it to t. On error t is unchanged.
func (t *Table) Apply(d *Delta) error {
	if err := t.Check(d); err != nil {
		return err
	}
	t.ApplyChecked(d)
	return nil
}

// ApplyChecked applies d, which t.Check(d) just accepted, without checking
// it again: the ring's readers and writer check every delta before they
// apply it, and a second Check costs a scan of all B buckets when the delta
// retires a server (6.4M at the paper's scale, at every mux).
func (t *Table) ApplyChecked(d *Delta) {
	for _, c := range d.Servers {
		if c.Remove {
			delete(t.Servers, c.ID)
		} else {
			t.Servers[c.ID] = c.Server
		}
	}
	t.applyMCT(d)
	if d.Cheetah != nil {
		t.Cheetah = d.Cheetah.Clone()
	}
	for _, c := range d.Buckets {
		t.Buckets[c.Index] = c.Bucket
	}
	t.Generation = d.Generation
}

// Validate checks the invariants a mux relies on: every owned bucket names
// an active server, every previous owner exists, and server addresses are
// unicast and of one family.
func (t *Table) Validate() error {
	var family Family
	for id, s := range t.Servers {
		if !id.Valid() {
			return fmt.Errorf("%w: server id %d outside %d–%d", ErrInvalid, id, MinServerID, MaxServerID)
		}
		if err := checkServer(s); err != nil {
			return fmt.Errorf("%w: server %d: %v", ErrInvalid, id, err)
		}
		if f := FamilyOf(s.Addr); family == 0 {
			family = f
		} else if f != family {
			return fmt.Errorf("%w: server %d at %v: the table mixes IPv4 and IPv6 servers (one family per instance)", ErrInvalid, id, s.Addr)
		}
	}
	lookup := func(id ServerID) (Server, bool) { s, ok := t.Servers[id]; return s, ok }
	for i, b := range t.Buckets {
		if err := checkBucket(b, lookup); err != nil {
			return fmt.Errorf("%w: bucket %d: %v", ErrInvalid, i, err)
		}
	}
	if t.Cheetah != nil {
		if err := t.Cheetah.Check(); err != nil {
			return err
		}
	}
	return t.validateMCT()
}

func checkServer(s Server) error {
	if !s.Addr.IsValid() || s.Addr.IsUnspecified() || s.Addr.Is4In6() {
		return fmt.Errorf("address %v is not a unicast IPv4 or IPv6 address", s.Addr)
	}
	if s.State != Active && s.State != Retired && s.State != Down {
		return fmt.Errorf("unknown state %d", s.State)
	}
	return nil
}

func checkBucket(b Bucket, lookup func(ServerID) (Server, bool)) error {
	n := b.History.Len()
	for _, id := range b.History[n:] {
		if id != NoServer {
			return errors.New("previous owners after the end of the history")
		}
	}
	if b.Current == NoServer {
		if n != 0 {
			return errors.New("previous owner without a current one")
		}
		return nil
	}
	if s, ok := lookup(b.Current); !ok {
		return fmt.Errorf("owner %d is not in the server-id table", b.Current)
	} else if s.State != Active {
		return fmt.Errorf("owner %d is %v", b.Current, s.State)
	}
	for i, p := range b.History[:n] {
		if _, ok := lookup(p); !ok {
			return fmt.Errorf("previous owner %d is not in the server-id table", p)
		}
		if p == b.Current {
			return fmt.Errorf("previous owner equals owner %d", b.Current)
		}
		for _, q := range b.History[:i] {
			if q == p {
				return fmt.Errorf("previous owner %d listed twice", p)
			}
		}
	}
	return nil
}
