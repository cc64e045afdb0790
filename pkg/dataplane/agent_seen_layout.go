package dataplane

import (
	"fmt"
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

// sameWordLayout: m is an mmapable array of 64-bit words (as the maps of
// earlier builds were), as many as ms holds.
func sameWordLayout(ms *ebpf.MapSpec, m *ebpf.Map) bool {
	if m.Type() != ebpf.Array || ms.Type != ebpf.Array || m.Flags()&unix.BPF_F_MMAPABLE == 0 ||
		m.ValueSize() == 0 || m.ValueSize()%8 != 0 || ms.ValueSize%8 != 0 {
		return false
	}
	return uint64(m.MaxEntries())*uint64(m.ValueSize()) == uint64(ms.MaxEntries)*uint64(ms.ValueSize)
}

// restoreSeenWords writes words (pinnedSeenWords) into the loaded agent's
// generation_seen, before its program sees a packet (so a whole-element
// update overwrites no packet's raise).
func (a *Agent) restoreSeenWords(words []uint64) error {
	for i := 0; i+1 < len(words) && uint32(i/2) < a.seen.MaxEntries(); i += 2 {
		if words[i] == 0 && words[i+1] == 0 {
			continue
		}
		if err := a.seen.Put(uint32(i/2), &agentGenerationWords{Word: [2]uint64{words[i], words[i+1]}}); err != nil {
			return fmt.Errorf("generation_seen of the pinned map before the upgrade: %w", err)
		}
	}
	return nil
}

// generationForgetArgs is bpf/agent.c's struct generation_forget_args.
type generationForgetArgs struct {
	Slots, Word uint32
}

// forgetWord clears word (0 or 1) of every VIP slot of generation_seen by
// the program's generation_forget: each word by one 64-bit store, the other
// word of the slot, which packets may raise meanwhile, unwritten.
func (a *Agent) forgetWord(word uint32) error {
	ret, err := a.objs.GenerationForget.Run(&ebpf.RunOptions{Context: generationForgetArgs{Slots: uint32(a.vips), Word: word}})
	if err != nil {
		return fmt.Errorf("clearing generation word %d: %w", word, err)
	}
	if ret != 0 {
		return fmt.Errorf("clearing generation word %d: program returned %d", word, ret)
	}
	return nil
}

// newestSeenIn is the newest (incarnation << 32 | generation) remembered
// in slot of a pinned agent's generation_seen (as Agent.NewestSeen), of
// this layout or of the one before issue 27 (`beamer agent inspect` of an
// agent not yet upgraded).
func newestSeenIn(m *ebpf.Map, slot uint32) (uint64, error) {
	if slot >= m.MaxEntries() && m.ValueSize() == 16 || uint64(slot)*2+1 >= uint64(m.MaxEntries()) && m.ValueSize() == 8 {
		return 0, fmt.Errorf("generation slot %d beyond the map's %d elements", slot, m.MaxEntries())
	}
	switch m.ValueSize() {
	case 16:
		var w agentGenerationWords
		if err := m.Lookup(slot, &w); err != nil {
			return 0, fmt.Errorf("generation slot %d: %w", slot, err)
		}
		return max(w.Word[0], w.Word[1]), nil
	case 8:
		var a, b uint64
		if err := m.Lookup(2*slot, &a); err != nil {
			return 0, fmt.Errorf("generation slot %d: %w", slot, err)
		}
		if err := m.Lookup(2*slot+1, &b); err != nil {
			return 0, fmt.Errorf("generation slot %d: %w", slot, err)
		}
		return max(a, b), nil
	}
	return 0, fmt.Errorf("generation_seen of %d-byte values: not an agent's layout", m.ValueSize())
}
