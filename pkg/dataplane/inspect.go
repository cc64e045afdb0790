package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Inspecting a node without its daemon (`beamer mux inspect`, `beamer agent
// inspect`). A daemon pins its attachment (pins.go): the kernel keeps the
// program, and every map the program uses, for as long as the pin exists,
// also while no daemon runs. The inspector opens the pinned link read-only,
// follows it to the attached program and from the program to its maps by
// id, as bpftool does — so it sees exactly the tables packets are
// forwarded with now, not a copy a daemon wrote somewhere else. It writes
// nothing and takes no lock: a daemon may be running, starting or gone.

// pinnedProgram is the program attached through the link pinned in dir and
// its maps by name, each checked against this build's definition.
type pinnedProgram struct {
	spec *ebpf.CollectionSpec
	prog *ebpf.Program
	// maps by the name the kernel reports, cut to 15 bytes: two names
	// may share one ("trusted_sources" and "trusted_sources6")
	maps map[string][]*ebpf.Map
	ids  map[ebpf.MapID]bool
}

// errNoPins is the error of a directory where no daemon pinned anything.
var errNoPins = errors.New("nothing is pinned there")

// openPinned opens the program behind the link pinned in dir, which must
// be the program named progName of spec (this build's object).
func openPinned(dir, progName string, spec *ebpf.CollectionSpec) (*pinnedProgram, error) {
	path := filepath.Join(dir, linkPin)
	l, err := link.LoadPinnedLink(path, nil) // links take no read-only flag; nothing here writes
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (is the daemon's --pin-dir another one, or was it run with --pin-dir -?)", path, errNoPins)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the pinned link %s: %w", path, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return nil, fmt.Errorf("pinned link %s: %w", path, err)
	}
	if attachedIfindex(info) == 0 {
		return nil, fmt.Errorf("pinned link %s is attached to no interface any more (the interface is gone); nothing forwards through it", path)
	}
	prog, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return nil, fmt.Errorf("the program of pinned link %s: %w", path, err)
	}
	p := &pinnedProgram{spec: spec, prog: prog, maps: map[string][]*ebpf.Map{}, ids: map[ebpf.MapID]bool{}}
	pinfo, err := prog.Info()
	if err != nil {
		p.close()
		return nil, fmt.Errorf("the program of pinned link %s: %w", path, err)
	}
	if want := kernelName(progName); pinfo.Name != want {
		p.close()
		return nil, fmt.Errorf("pinned link %s runs program %q, not %q: not a pin directory of this daemon", path, pinfo.Name, want)
	}
	ids, ok := pinfo.MapIDs()
	if !ok {
		p.close()
		return nil, fmt.Errorf("the kernel does not list the maps of program %q", pinfo.Name)
	}
	p.addMaps(ids)
	// The programs it tail-calls (the mux's IPv6 path, mux6.h) use maps
	// of their own: one level down is every program the daemons load.
	for _, m := range slices.Concat(slices.Collect(maps.Values(p.maps))...) {
		if m.Type() != ebpf.ProgramArray {
			continue
		}
		for k := uint32(0); k < m.MaxEntries(); k++ {
			var id uint32
			if err := m.Lookup(k, &id); err != nil || id == 0 {
				continue
			}
			callee, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
			if err != nil {
				continue
			}
			if ci, err := callee.Info(); err == nil {
				if cids, ok := ci.MapIDs(); ok {
					p.addMaps(cids)
				}
			}
			callee.Close()
		}
	}
	return p, nil
}

// addMaps opens the maps of ids not opened yet, by name.
func (p *pinnedProgram) addMaps(ids []ebpf.MapID) {
	for _, id := range ids {
		if p.ids[id] {
			continue
		}
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue // freed between the listing and now
		}
		mi, err := m.Info()
		if err != nil {
			m.Close()
			continue
		}
		p.ids[id] = true
		p.maps[mi.Name] = append(p.maps[mi.Name], m)
	}
}

// kernelName is name as the kernel keeps it (BPF_OBJ_NAME_LEN − 1 bytes).
func kernelName(name string) string {
	if len(name) > 15 {
		return name[:15]
	}
	return name
}

// mapNamed is the program's map of that name in this build's object,
// refused when the kernel's map has another layout (a daemon of another
// version pinned it): the inspector decodes with this build's types.
func (p *pinnedProgram) mapNamed(name string) (*ebpf.Map, error) {
	candidates := p.maps[kernelName(name)]
	if len(candidates) == 0 {
		return nil, fmt.Errorf("the pinned program has no map %s: it was loaded by another version of beamer", name)
	}
	ms, ok := p.spec.Maps[name]
	if !ok {
		return candidates[0], nil
	}
	var err error
	for _, m := range candidates {
		// Sizes are the daemon's to choose (some maps are resized at
		// load); the layout is type, key, value and flags.
		want := ms.Copy()
		want.MaxEntries = m.MaxEntries()
		if err = want.Compatible(m); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("map %s of the pinned program has another layout than this version of beamer reads (%v): inspect with the version that loaded it", name, err)
}

// optionalMap is mapNamed for a map older builds lack: nil when absent.
func (p *pinnedProgram) optionalMap(name string) (*ebpf.Map, error) {
	if _, ok := p.maps[kernelName(name)]; !ok {
		return nil, nil
	}
	m, err := p.mapNamed(name)
	if err != nil && kernelName(name) != name {
		// The kernel's cut name is another map's: this one is absent.
		return nil, nil
	}
	return m, err
}

func (p *pinnedProgram) close() {
	for _, ms := range p.maps {
		for _, m := range ms {
			m.Close()
		}
	}
	p.prog.Close()
}

// innerMap opens the inner map stored at key of a map-in-map (nil when the
// slot is empty).
func innerMap(outer *ebpf.Map, key uint32) (*ebpf.Map, error) {
	var id uint32
	if err := outer.Lookup(key, &id); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if id == 0 {
		return nil, nil
	}
	return ebpf.NewMapFromID(ebpf.MapID(id))
}

// readWords reads an array map of 64-bit words (or of values made of
// them): mapped read-only when the map is mmapable (the bucket and server
// tables, up to millions of words), else one lookup per element.
func readWords(m *ebpf.Map) ([]uint64, error) {
	per := m.ValueSize() / 8
	if m.Flags()&unix.BPF_F_MMAPABLE != 0 {
		n := int(m.MaxEntries() * per)
		size := (n*8 + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1)
		mem, err := unix.Mmap(m.FD(), 0, size, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("mapping %d words: %w", n, err)
		}
		defer unix.Munmap(mem)
		out := make([]uint64, n)
		for i := range out {
			out[i] = atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[i*8])))
		}
		return out, nil
	}
	out := make([]uint64, 0, m.MaxEntries()*per)
	vals := make([]uint64, per)
	for k := uint32(0); k < m.MaxEntries(); k++ {
		if err := m.Lookup(k, &vals); err != nil {
			return nil, fmt.Errorf("reading %d of %d: %w", k, m.MaxEntries(), err)
		}
		out = append(out, vals...)
	}
	return out, nil
}
