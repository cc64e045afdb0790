// Package bpfspec reads sizes, limits and struct layouts from a compiled
// program's collection spec (its maps and BTF), so that Go never copies a
// number from bpf/include/limits.h by hand. The mux loader and the
// strategies' own loaders (pkg/strategy/NAME) both read through it.
package bpfspec

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Reader reads one spec; the first failure is kept in Err and every later
// read returns 0, so a caller checks Err once after all its reads.
type Reader struct {
	Spec *ebpf.CollectionSpec
	Err  error
}

// Fail records the first failure.
func (r *Reader) Fail(format string, args ...any) int {
	if r.Err == nil {
		r.Err = fmt.Errorf("bpf program layout: "+format, args...)
	}
	return 0
}

// Entries is map m's max_entries.
func (r *Reader) Entries(m string) int {
	ms, ok := r.Spec.Maps[m]
	if !ok || ms.MaxEntries == 0 {
		return r.Fail("no map %s", m)
	}
	return int(ms.MaxEntries)
}

// ValueSize is map m's value size in bytes.
func (r *Reader) ValueSize(m string) int {
	ms, ok := r.Spec.Maps[m]
	if !ok || ms.ValueSize == 0 {
		return r.Fail("no map %s", m)
	}
	return int(ms.ValueSize)
}

// InnerEntries is the max_entries of map-in-map m's inner map.
func (r *Reader) InnerEntries(m string) int {
	ms, ok := r.Spec.Maps[m]
	if !ok || ms.InnerMap == nil || ms.InnerMap.MaxEntries == 0 {
		return r.Fail("no map %s with an inner map", m)
	}
	return int(ms.InnerMap.MaxEntries)
}

// StructType is struct name's BTF.
func (r *Reader) StructType(name string) *btf.Struct {
	var st *btf.Struct
	if r.Spec.Types == nil {
		r.Fail("no BTF")
		return nil
	}
	if err := r.Spec.Types.TypeByName(name, &st); err != nil {
		r.Fail("struct %s: %v", name, err)
		return nil
	}
	return st
}

// Size is struct name's size in bytes.
func (r *Reader) Size(name string) int {
	st := r.StructType(name)
	if st == nil {
		return 0
	}
	return int(st.Size)
}

// array is the length and byte offset of struct name's array field.
func (r *Reader) Array(name, field string) (n, offset int) {
	st := r.StructType(name)
	if st == nil {
		return 0, 0
	}
	for _, m := range st.Members {
		if m.Name != field {
			continue
		}
		a, ok := btf.UnderlyingType(m.Type).(*btf.Array)
		if !ok || a.Nelems == 0 {
			return r.Fail("%s.%s is no array", name, field), 0
		}
		return int(a.Nelems), int(m.Offset.Bytes())
	}
	return r.Fail("struct %s has no field %s", name, field), 0
}

// constant is the value of a 32-bit read-only variable.
func (r *Reader) Constant(name string) int {
	vs, ok := r.Spec.Variables[name]
	var v uint32
	if !ok || !vs.Constant() {
		return r.Fail("no constant %s", name)
	}
	if err := vs.Get(&v); err != nil {
		return r.Fail("constant %s: %v", name, err)
	}
	return int(v)
}

// Offset is the byte offset of struct name's field.
func (r *Reader) Offset(name, field string) int {
	st := r.StructType(name)
	if st == nil {
		return 0
	}
	for _, m := range st.Members {
		if m.Name == field {
			return int(m.Offset.Bytes())
		}
	}
	return r.Fail("struct %s has no field %s", name, field)
}
