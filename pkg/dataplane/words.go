package dataplane

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// wordArray is a BPF array of 64-bit values mapped into our memory. Writes are
// single aligned atomic stores, so the BPF program reading an element with
// one 64-bit load sees either the old or the new value, never a torn mix —
// which a bpf(BPF_MAP_UPDATE_ELEM) copy does not promise.
type wordArray struct {
	m   *ebpf.Map
	mem []byte
	n   uint32
}

func newWordArray(n uint32, innerOf bool) (*wordArray, error) {
	flags := uint32(unix.BPF_F_MMAPABLE)
	if innerOf {
		flags |= unix.BPF_F_INNER_MAP
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: n, Flags: flags})
	if err != nil {
		return nil, fmt.Errorf("creating %d-word array: %w", n, err)
	}
	a, err := mapWords(m)
	if err != nil {
		m.Close()
	}
	return a, err
}

// mapWords maps an existing mmapable array (of 64-bit values, or of values
// made of 64-bit words: n counts the words).
func mapWords(m *ebpf.Map) (*wordArray, error) {
	return mapWordsProt(m, unix.PROT_READ|unix.PROT_WRITE)
}

// mapWordsProt is mapWords with the mapping's protection (inspect maps
// read-only: readWords).
func mapWordsProt(m *ebpf.Map, prot int) (*wordArray, error) {
	n := m.MaxEntries() * (m.ValueSize() / 8)
	size := (int(n)*8 + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1)
	mem, err := unix.Mmap(m.FD(), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %d-word array: %w", n, err)
	}
	return &wordArray{m: m, mem: mem, n: n}, nil
}

func (a *wordArray) ptr(i uint32) *uint64 { return (*uint64)(unsafe.Pointer(&a.mem[uintptr(i)*8])) }

func (a *wordArray) store(i uint32, w uint64) { atomic.StoreUint64(a.ptr(i), w) }

func (a *wordArray) load(i uint32) uint64 { return atomic.LoadUint64(a.ptr(i)) }

func (a *wordArray) close() {
	if a == nil {
		return
	}
	unix.Munmap(a.mem)
	a.m.Close()
}
