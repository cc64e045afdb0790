// Package ringspi is the ring payload's strategy interface: a strategy
// that keeps state of its own in the forwarding table (beside buckets and
// servers) writes and reads it as a section at the end of the ring's
// payloads, and registers that section here from its own package
// (pkg/strategy/NAME/payload.go) in init(), at a fixed position.
//
// It imports no layer: a strategy package imports it, never
// pkg/controlplane/ring, so the ring's own tests can load every strategy
// (pkg/strategy/all) without an import cycle.
//
// The position is part of the stored format: sections follow the bucket
// columns in the order of their positions, 1, 2, 3, ... without a gap. A
// section is written when it or a later one holds something (in its empty
// form then), so payloads of strategies without a section are byte for
// byte what they were before the section existed, and a reader stops at
// the payload's end. A new section takes the next free position; moving
// one would make every stored payload read wrong.
package ringspi

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MaxServerBytes is what all sections of one payload may take per server
// of the table at most (e.g. a per-server load record): the ring bounds a
// payload's size by it before it reads one (ring.instanceLimits).
const MaxServerBytes = 8

// Section is one strategy's section of the ring's payloads.
type Section interface {
	// Delta and Table say what the section of d or t is to write.
	Delta(d *forwarding.Delta) Bytes
	Table(t *forwarding.Table) Bytes
	// ReadDelta and ReadTable read the section into d or t from r, which
	// starts at the section and holds at least one byte (a payload that
	// ends before a section does not carry it). A section reads exactly
	// its own bytes; a damaged one sets r's error (Reader.Fail).
	ReadDelta(r *Reader, d *forwarding.Delta)
	ReadTable(r *Reader, t *forwarding.Table)
}

// Comparer is a Section that tells whether two tables hold the same state
// of its own: the ring checks that what it loads is what was published
// (ring.Writer.Verify) with every section that is one.
type Comparer interface {
	Same(a, b *forwarding.Table) bool
}

// Bytes is one section of one payload: whether it holds nothing, and its
// size and writer. An empty section is written only before a later
// non-empty one, in its empty form: Size and Put stand for that form then.
// A section with no empty form leaves Put nil when empty; the ring then
// refuses to write a later section after it.
type Bytes struct {
	Empty bool
	Size  int
	Put   func(b []byte) // writes the section into b[:Size]
}

// Registered is one registered section.
type Registered struct {
	Position int // 1 for the first section after the bucket columns
	Name     string
	Section  Section
}

func (r Registered) String() string { return fmt.Sprintf("section %d (%s)", r.Position, r.Name) }

// registry holds the sections by position.
type registry struct {
	mu       sync.RWMutex
	sections []Registered // by position
}

// register adds s at position, refusing a position below 1, one taken, a
// name taken or no section.
func (g *registry) register(position int, name string, s Section) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if position < 1 {
		return fmt.Errorf("ringspi: section %q at position %d: positions start at 1", name, position)
	}
	if name == "" || s == nil {
		return fmt.Errorf("ringspi: section at position %d without a name or a section", position)
	}
	for _, r := range g.sections {
		if r.Position == position {
			return fmt.Errorf("ringspi: position %d taken twice, by %q and %q", position, r.Name, name)
		}
		if r.Name == name {
			return fmt.Errorf("ringspi: section %q registered twice (positions %d and %d)", name, r.Position, position)
		}
	}
	g.sections = append(g.sections, Registered{Position: position, Name: name, Section: s})
	slices.SortFunc(g.sections, func(a, b Registered) int { return a.Position - b.Position })
	return nil
}

// list is the sections in payload order, or an error naming the first
// missing position: a section after a gap cannot be written or read, as
// the missing section's bytes would come first.
func (g *registry) list() ([]Registered, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for i, r := range g.sections {
		if r.Position != i+1 {
			have := make([]string, len(g.sections))
			for j, r := range g.sections {
				have[j] = r.String()
			}
			return nil, fmt.Errorf("ringspi: no payload section at position %d, which must come before %v (registered: %s): build every strategy in (pkg/strategy/all)",
				i+1, r, strings.Join(have, ", "))
		}
	}
	return slices.Clone(g.sections), nil
}

var sections registry

// Register adds a strategy's payload section at its fixed position (see
// the package comment); a strategy package calls it from init(). A taken
// position or name panics: two strategies claim the same bytes.
func Register(position int, name string, s Section) {
	if err := sections.register(position, name, s); err != nil {
		panic(err)
	}
}

// Sections are the registered sections in payload order; an error when a
// position is missing before a registered one (a binary built with some
// strategies only). pkg/strategy/all checks it in init(), so a binary
// with a gap does not start.
func Sections() ([]Registered, error) { return sections.list() }
