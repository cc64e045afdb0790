package dataplane

import (
	"maps"

	"github.com/cilium/ebpf"
)

// Another build of the same program (MuxOptions.Spec, AgentOptions.Spec).
//
// A caller may load a build of bpf/mux.c or bpf/agent.c other than the one
// embedded here: the same program compiled with more programs in it (the
// research wing's benchmark build, research/bench/dpbench, wraps the mux
// in programs that undo what it did so a test run can repeat it). The
// loader treats such a build as its own — it sets its constants, sizes
// its maps and adopts pinned ones — and then loads the whole of it, so
// that every extra program runs on this mux's or agent's very maps, and
// hands the result out as one *ebpf.Collection (Mux.Collection,
// Agent.Collection).
//
// Why one collection and not accessors: this package then knows nothing
// of what another build adds — no program, variable or map of it is named
// here — and a caller has in one place, by the object's own names, what
// it needs to run the extra programs, set their variables, and load yet
// another object on the same maps (ebpf.CollectionOptions.MapReplacements
// from Collection().Maps).

// loadWhole loads every program and map of spec (not just those own
// names), assigns own's fields from it, and returns everything loaded by
// name (a view: the caller does not close it) and the part own did not
// take, which the caller closes when done.
func loadWhole(spec *ebpf.CollectionSpec, opts *ebpf.CollectionOptions, own any) (view, rest *ebpf.Collection, err error) {
	coll, err := ebpf.NewCollectionWithOptions(spec, *opts)
	if err != nil {
		return nil, nil, err
	}
	view = &ebpf.Collection{Programs: maps.Clone(coll.Programs), Maps: maps.Clone(coll.Maps), Variables: maps.Clone(coll.Variables)}
	if err := coll.Assign(own); err != nil {
		coll.Close()
		return nil, nil, err
	}
	return view, coll, nil
}
