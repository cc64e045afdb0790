package dataplane

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The benchmark build's scratch memory (bpf/bench/scratch.h) and the
// program that measures what a touched cache line costs.

// LinesProgram reads SetBenchLines distinct cache lines and changes
// nothing (benchmark build).
func (m *Mux) LinesProgram() *ebpf.Program { return m.bench.Lines }

// SetBenchLines sets how many lines LinesProgram reads (at most 16) and
// how many lines apart (131: a page each; 2: all in one page).
func (m *Mux) SetBenchLines(n, stride uint32) error {
	if n > 16 || stride == 0 || uint64(16*8)*uint64(stride) > uint64(m.bench.Scratch.MaxEntries()) {
		return fmt.Errorf("lines_bench reads at most 16 lines within its array, not %d lines %d apart", n, stride)
	}
	if err := m.bench.Stride.Set(stride); err != nil {
		return err
	}
	return m.bench.NLines.Set(n)
}

// CopyBucketsToScratch copies the bucket table of instance name, word for
// word, to the start of the scratch array, where a measuring build
// (scripts/mux-stages.sh, "bucket-inline") reads it without a helper call.
func (m *Mux) CopyBucketsToScratch(name string) error {
	if m.bench.Scratch == nil {
		return fmt.Errorf("the scratch array is in the benchmark build only")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.instances[name]
	if in == nil || in.buckets == nil {
		return fmt.Errorf("no instance %q with a bucket table", name)
	}
	src := in.buckets.words
	if src.n > m.bench.Scratch.MaxEntries() {
		return fmt.Errorf("bucket table of %d words, scratch array of %d", src.n, m.bench.Scratch.MaxEntries())
	}
	dst, err := mapWords(m.bench.Scratch)
	if err != nil {
		return err
	}
	defer unix.Munmap(dst.mem) // the map itself stays with the Mux
	for i := uint32(0); i < src.n; i++ {
		dst.store(i, src.load(i))
	}
	return nil
}
