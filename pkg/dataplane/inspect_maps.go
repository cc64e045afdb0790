package dataplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Inspecting a node without its daemon (`beamer mux inspect`, `beamer
// agent inspect`): a daemon pins its attachment (pins.go), and the pinned
// link holds the program the kernel runs and, through it, every map that
// program reads — also those not pinned by name, such as the mux's tables.
// The readers below open the pinned link read-only, follow it to the
// program and its maps, check each map they decode against this build's
// definition of it (the same check a daemon makes before it adopts a
// pinned map), and decode them with the Go types the daemons write with.
// Nothing is written.

// ErrNothingPinned says that a pin directory holds no pinned program.
var ErrNothingPinned = errors.New("nothing pinned")

// pinnedProgram is the program attached through the link pinned in a
// directory, with the maps it (and the programs it tail-calls) uses, by
// the names this build's object gives them.
type pinnedProgram struct {
	dir  string
	spec *ebpf.CollectionSpec
	prog ProgramView
	maps map[string]*ebpf.Map // by kernel name (at most 15 characters)
}

// ProgramView names the program an inspection read.
type ProgramView struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag"`
}

// openPinnedProgram follows the link pinned in dir to its program's maps;
// the program must be the one named want (the mux's or the agent's).
func openPinnedProgram(dir string, spec *ebpf.CollectionSpec, want string) (*pinnedProgram, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: no such directory (is the daemon's --pin-dir elsewhere, or was it stopped cleanly, which removes its pins?)", ErrNothingPinned, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("pin directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("pin directory %s: not a directory", dir)
	}
	path := filepath.Join(dir, linkPin)
	// Links refuse BPF_F_RDONLY; nothing here updates or detaches it.
	l, err := link.LoadPinnedLink(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: no pinned link %s", ErrNothingPinned, dir, path)
	}
	if errors.Is(err, os.ErrPermission) {
		return nil, fmt.Errorf("pinned link %s: %w (inspect runs as root)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pinned link %s: %w", path, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return nil, fmt.Errorf("pinned link %s: %w", path, err)
	}
	prog, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return nil, fmt.Errorf("program %d of pinned link %s: %w", info.Program, path, err)
	}
	defer prog.Close()
	p := &pinnedProgram{dir: dir, spec: spec, maps: map[string]*ebpf.Map{}}
	pi, err := prog.Info()
	if err != nil {
		return nil, fmt.Errorf("program %d of pinned link %s: %w", info.Program, path, err)
	}
	p.prog = ProgramView{ID: uint32(info.Program), Name: pi.Name, Tag: pi.Tag}
	if pi.Name != kernelName(want) {
		return nil, fmt.Errorf("the program pinned at %s is %q, not %q: the pin directory of another daemon?", dir, pi.Name, want)
	}
	if err := p.addMapsOf(prog, 0); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// addMapsOf opens the maps of prog, and of the programs in its program
// arrays (tail calls: the mux's IPv6 path), one level deep at most twice.
func (p *pinnedProgram) addMapsOf(prog *ebpf.Program, depth int) error {
	pi, err := prog.Info()
	if err != nil {
		return fmt.Errorf("program info: %w", err)
	}
	ids, ok := pi.MapIDs()
	if !ok {
		return fmt.Errorf("this kernel does not tell a program's maps")
	}
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			return fmt.Errorf("map %d of the pinned program: %w", id, err)
		}
		mi, err := m.Info()
		if err != nil || p.maps[mi.Name] != nil {
			m.Close()
			continue
		}
		p.maps[mi.Name] = m
		if m.Type() != ebpf.ProgramArray || depth >= 2 {
			continue
		}
		for i := range m.MaxEntries() {
			var pid uint32
			if m.Lookup(i, &pid) != nil || pid == 0 {
				continue
			}
			tail, err := ebpf.NewProgramFromID(ebpf.ProgramID(pid))
			if err != nil {
				continue // replaced meanwhile
			}
			err = p.addMapsOf(tail, depth+1)
			tail.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// kernelName is the name the kernel keeps of a map of the object.
func kernelName(name string) string {
	if len(name) > unix.BPF_OBJ_NAME_LEN-1 {
		return name[:unix.BPF_OBJ_NAME_LEN-1]
	}
	return name
}

// mapNamed is the program's map of that name, checked against this
// build's definition of it. optional: a missing map is nil, not an error
// (a map the program reaches only in some configurations).
func (p *pinnedProgram) mapNamed(name string, optional bool) (*ebpf.Map, error) {
	ms, ok := p.spec.Maps[name]
	if !ok {
		return nil, fmt.Errorf("this build has no map %s", name)
	}
	m := p.maps[kernelName(name)]
	if m == nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("the program pinned at %s (id %d) has no map %s: pinned by another beamer version?", p.dir, p.prog.ID, name)
	}
	if err := compatibleLayout(ms, m); err != nil {
		return nil, fmt.Errorf("map %s of the program pinned at %s has another layout than this build's (%v): pinned by another beamer version; inspect it with that version's beamer", name, p.dir, err)
	}
	return m, nil
}

// resizedAtLoad are the maps whose entries a daemon sets when it loads
// its program (agent.go: the sum of the VIPs' buckets; conntrack.go: the
// connection table's chunks).
var resizedAtLoad = map[string]bool{"bucket_changed": true, "conntrack": true}

// compatibleLayout is MapSpec.Compatible, but for the entries of maps a
// daemon resizes at load. Every other size is checked: the readers index
// the maps (and their memory) by the sizes of this build.
func compatibleLayout(ms *ebpf.MapSpec, m *ebpf.Map) error {
	s := ms.Copy()
	if resizedAtLoad[ms.Name] {
		s.MaxEntries = m.MaxEntries()
	}
	return s.Compatible(m)
}

// pinnedMap opens a map pinned by name in dir read-only, checked against
// this build's definition: nil when nothing is pinned there.
func pinnedMap(dir, name string, spec *ebpf.CollectionSpec) (*ebpf.Map, error) {
	path := filepath.Join(dir, name)
	m, err := ebpf.LoadPinnedMap(path, &ebpf.LoadPinOptions{ReadOnly: true})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pinned map %s: %w", path, err)
	}
	if err := compatibleLayout(spec.Maps[name], m); err != nil {
		m.Close()
		return nil, fmt.Errorf("pinned map %s has another layout than this build's (%v): pinned by another beamer version; inspect it with that version's beamer", path, err)
	}
	return m, nil
}

// innerMap opens the map at key slot of a map of maps (nil when none).
func innerMap(outer *ebpf.Map, slot uint32) (*ebpf.Map, error) {
	var id uint32
	if err := outer.Lookup(slot, &id); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return ebpf.NewMapFromID(ebpf.MapID(id))
}

// readWords maps an mmapable array of 64-bit words read-only, for
// bucketArray and the other readers of wordArray; close unmaps it.
func readWords(m *ebpf.Map) (*wordArray, error) { return mapWordsProt(m, unix.PROT_READ) }

func (p *pinnedProgram) close() {
	for _, m := range p.maps {
		m.Close()
	}
}
