package dataplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Pinning: a daemon's program stays attached, and its state maps stay
// alive, after the daemon's process is gone. The attachment is a bpf_link
// pinned in bpffs: the kernel keeps it (and the program and every map the
// program uses) until the pin is removed, so a crashed or upgraded daemon's
// packets keep being forwarded with the last state. The next daemon loads
// its own program, fills it, and swaps it into the pinned link in one step
// (BPF_LINK_UPDATE): no moment without a program. Maps whose content must
// survive the swap (counters, connection tables) are pinned too and reused
// when the new program's definition of them is compatible.

// BPFFSRoot is where bpffs is mounted.
const BPFFSRoot = "/sys/fs/bpf"

// linkPin is the file name of the pinned attachment inside a pin directory.
const linkPin = "link"

// ensureBPFFS mounts bpffs at BPFFSRoot when nothing is mounted there yet
// (a fresh machine without systemd), and creates dir under it.
func ensureBPFFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(BPFFSRoot, &st); err != nil {
		return fmt.Errorf("bpffs at %s: %w", BPFFSRoot, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		if err := unix.Mount("bpf", BPFFSRoot, "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mounting bpffs at %s: %w", BPFFSRoot, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin directory: %w", err)
	}
	return nil
}

// pinnedMaps opens the maps pinned in dir under the given names whose
// definition in spec they still match. A map pinned by an older build with
// another layout is left out: the new program then starts it empty.
func pinnedMaps(dir string, spec *ebpf.CollectionSpec, names []string) map[string]*ebpf.Map {
	out := map[string]*ebpf.Map{}
	if dir == "" {
		return out
	}
	for _, name := range names {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if err != nil {
			continue
		}
		ms, ok := spec.Maps[name]
		if !ok || ms.Compatible(m) != nil {
			m.Close()
			continue
		}
		out[name] = m
	}
	return out
}

func closeMaps(ms map[string]*ebpf.Map) {
	for _, m := range ms {
		m.Close()
	}
}

// pinMaps pins maps under their names in dir, replacing earlier pins.
func pinMaps(dir string, maps map[string]*ebpf.Map) error {
	for name, m := range maps {
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replacing pin %s: %w", path, err)
		}
		if err := m.Pin(path); err != nil {
			return fmt.Errorf("pinning map %s: %w", name, err)
		}
	}
	return nil
}

// PinnedLink is the attachment pinned in dir by an earlier daemon, or nil
// when there is none or it no longer names a device (the interface went
// away: its stale pin is removed).
func PinnedLink(dir string) (link.Link, error) {
	if dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, linkPin)
	l, err := link.LoadPinnedLink(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pinned link %s: %w", path, err)
	}
	info, err := l.Info()
	if err == nil && attachedIfindex(info) == 0 {
		l.Unpin()
		l.Close()
		return nil, nil
	}
	return l, nil
}

func attachedIfindex(info *link.Info) uint32 {
	if x := info.XDP(); x != nil {
		return x.Ifindex
	}
	if t := info.TCX(); t != nil {
		return t.Ifindex
	}
	return 1 // another kind: assume live
}

// adoptOrAttach swaps prog into the link pinned in dir, or, when there is
// none, attaches it with attach and pins the new link there.
func adoptOrAttach(dir string, prog *ebpf.Program, attach func() (link.Link, error)) (l link.Link, adopted bool, err error) {
	if dir != "" {
		if l, err = PinnedLink(dir); err != nil {
			return nil, false, err
		}
		if l != nil {
			if err := l.Update(prog); err != nil {
				l.Close()
				return nil, false, fmt.Errorf("replacing the program of the pinned link in %s: %w", dir, err)
			}
			return l, true, nil
		}
	}
	if l, err = attach(); err != nil {
		return nil, false, err
	}
	if dir != "" {
		if err := l.Pin(filepath.Join(dir, linkPin)); err != nil {
			l.Close()
			return nil, false, fmt.Errorf("pinning link in %s: %w", dir, err)
		}
	}
	return l, false, nil
}

// Unpin detaches a pinned link and removes every pin in dir and dir itself:
// the graceful end of a daemon. The program and maps go when the last
// descriptor closes.
func Unpin(dir string, l link.Link) error {
	var errs []error
	if l != nil {
		if err := l.Unpin(); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DetachPinned detaches every link pinned under dir (an agent's ingress
// link, its Cheetah cookie writer's) and then removes dir. Removing a pin
// alone does detach, but only once the kernel frees the pin's inode, after
// an RCU grace period: an uninstall that returned with its programs still
// attached for a moment would make the next step (a check, a new daemon
// attaching in another mode) see them. A missing dir is nothing to do.
func DetachPinned(dir string) error {
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != linkPin {
			return nil
		}
		l, err := link.LoadPinnedLink(path, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("pinned link %s: %w", path, err))
			return nil
		}
		defer l.Close()
		// A link whose device went away is detached already (EOPNOTSUPP
		// for kinds without explicit detach: its pin's removal does it).
		if err := l.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) && !errors.Is(err, unix.ENOLINK) {
			errs = append(errs, fmt.Errorf("detaching %s: %w", path, err))
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Attached says whether a link pinned in dir is still attached to a device.
func Attached(dir string) bool {
	l, err := PinnedLink(dir)
	if l != nil {
		l.Close()
	}
	return l != nil || err != nil
}
