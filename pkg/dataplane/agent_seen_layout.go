package dataplane

import (
	"path/filepath"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// generation_seen holds two 64-bit words per VIP slot (the newest
// (incarnation, generation) of the current and of the previous memory
// period). Until issue 27 each word was an element of its own (2 × the VIPs
// of 8 bytes, slot*2 and slot*2+1); now a slot's two words are one 16-byte
// element, so a packet reads both through one lookup. Both lay the words
// out in the same order in memory, so an agent upgraded over a pinned map
// of the other layout, which it cannot adopt (ebpf MapSpec.Compatible
// refuses another value size), copies its words into the new map instead:
// the newest state remembered survives the upgrade as it survives a
// restart.

// pinnedSeenWords are the words of a pinned generation_seen in dir that
// this build cannot adopt but lays out the same (an array of 64-bit words
// as many as spec's), in order; nil when there is none, when it can be
// adopted as it is, or when its words mean something else.
func pinnedSeenWords(dir string, spec *ebpf.CollectionSpec) []uint64 {
	ms := spec.Maps["generation_seen"]
	if dir == "" || ms == nil {
		return nil
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(dir, "generation_seen"), nil)
	if err != nil {
		return nil
	}
	defer m.Close()
	if ms.Compatible(m) == nil || !sameWordLayout(ms, m) {
		return nil
	}
	old, err := readWords(m)
	if err != nil {
		return nil
	}
	defer unix.Munmap(old.mem)
	words := make([]uint64, old.n)
	for i := range words {
		words[i] = old.load(uint32(i))
	}
	return words
}

// sameWordLayout: m is an mmapable array of 64-bit words, as many as ms
// holds.
func sameWordLayout(ms *ebpf.MapSpec, m *ebpf.Map) bool {
	if m.Type() != ebpf.Array || ms.Type != ebpf.Array || m.Flags()&unix.BPF_F_MMAPABLE == 0 ||
		m.ValueSize() == 0 || m.ValueSize()%8 != 0 || ms.ValueSize%8 != 0 {
		return false
	}
	return uint64(m.MaxEntries())*uint64(m.ValueSize()) == uint64(ms.MaxEntries)*uint64(ms.ValueSize)
}

// restoreSeenWords writes words (pinnedSeenWords) into the loaded agent's
// generation_seen, before its program sees a packet.
func (a *Agent) restoreSeenWords(words []uint64) {
	for i, w := range words {
		if uint32(i) < a.seen.n {
			a.seen.store(uint32(i), w)
		}
	}
}
