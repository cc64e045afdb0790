package netlab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/prometheus/procfs"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces live: a file per namespace with
// the namespace bind-mounted on it. iproute2 (`ip netns`) and
// vishvananda/netns use the same directory (/var/run is /run on Debian).
const RunDir = "/run/netns"

// ensureRunDir makes RunDir a shared mount point of its own, as `ip netns
// add` does before it creates a namespace file, and must run before every
// namespace file is made.
//
// Why: on a fresh machine RunDir is a plain directory. The first `ip netns
// add` on the host bind-mounts RunDir onto itself (when it is not a mount
// point yet) and makes it shared. Namespace files another program had
// bind-mounted under the plain directory end up beneath that new mount: the
// name shows a copy, removing it fails with "device or resource busy", and
// the namespace leaks. When RunDir is a mount point already, `ip netns add`
// only makes it shared and puts nothing over it, so creating namespaces the
// same way makes them safe from it.
//
// Two of our processes never both bind-mount: they take an exclusive lock on
// the directory (the lock belongs to its inode, the same under the bind
// mount and in every mount namespace that shares the directory), and the
// second finds a mount point. A concurrent `ip netns add` takes no lock; its
// test is the same as ours (making RunDir shared fails with EINVAL unless
// it is a mount point), so the two can only both bind-mount when they test
// within the same few microseconds, before either has made a namespace file.
// Then the later mount lies over the earlier and copies its contents (it is
// recursive), so every name stays usable; once the earlier is shared, the
// later is its peer (a bind of a shared mount joins its peer group) and
// mounts and removals propagate between the two (checked on kernel 6.18).
func ensureRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	dir, err := os.Open(RunDir)
	if err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	defer dir.Close() // releases the lock
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("netlab: locking %s: %w", RunDir, err)
	}
	err = makeRunDirShared()
	if errors.Is(err, unix.EINVAL) { // a plain directory: give it a mount of its own
		if err := unix.Mount(RunDir, RunDir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("netlab: bind-mounting %s onto itself: %w", RunDir, err)
		}
		err = makeRunDirShared()
	}
	if err != nil {
		return fmt.Errorf("netlab: making %s a shared mount point: %w", RunDir, err)
	}
	return checkRunDirShared()
}

// makeRunDirShared makes RunDir and every mount below it shared. It fails
// with EINVAL when RunDir is not a mount point: iproute2's test.
func makeRunDirShared() error {
	return unix.Mount("", RunDir, "", unix.MS_SHARED|unix.MS_REC, "")
}

// checkRunDirShared verifies, in /proc/self/mountinfo, that the mount one
// sees at RunDir (the topmost, if several lie over each other) is shared.
func checkRunDirShared() error {
	top, err := runDirTop()
	if err != nil {
		return err
	}
	if top == nil {
		return fmt.Errorf("netlab: %s is not a mount point after mounting it", RunDir)
	}
	if _, shared := top.OptionalFields["shared"]; !shared {
		return fmt.Errorf("netlab: %s is mounted but not shared", RunDir)
	}
	return nil
}

// runDirTop is the mount one sees at RunDir (of several mounts there, the
// one on top; nil when RunDir is not a mount point): the mount whose id
// statx reports for RunDir, if it is mounted at RunDir.
func runDirTop() (*procfs.MountInfo, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, RunDir, 0, unix.STATX_MNT_ID, &stx); err != nil {
		return nil, fmt.Errorf("netlab: statx %s: %w", RunDir, err)
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil, fmt.Errorf("netlab: reading mountinfo: %w", err)
	}
	for _, m := range mounts {
		if uint64(m.MountID) == stx.Mnt_id && m.MountPoint == RunDir {
			return m, nil
		}
	}
	return nil, nil
}

// createNamed creates a network namespace named name under RunDir, without
// leaving the calling goroutine's thread in it. A failed creation leaves no
// file behind.
func createNamed(name string) (netns.NsHandle, error) {
	if err := ensureRunDir(); err != nil {
		return 0, err
	}
	path := filepath.Join(RunDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return 0, err
	}
	f.Close()
	h, err := bindNewNamespace(path)
	if err != nil {
		os.Remove(path)
		return 0, err
	}
	return h, nil
}

// bindNewNamespace makes a new network namespace and bind-mounts it on
// path. The namespace is made by moving a locked thread into it, which
// then returns to where it was.
func bindNewNamespace(path string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return 0, err
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return 0, err
	}
	h, err := netns.Get()
	if err == nil {
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err = unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
			h.Close()
		}
	}
	if serr := netns.Set(orig); serr != nil {
		// A thread we cannot move back must not run other goroutines.
		panic(fmt.Sprintf("netlab: cannot return to original namespace: %v", serr))
	}
	return h, err
}

// deleteNamed removes a namespace's name. A file with nothing mounted on it
// (a creation that died half way) is removed too.
func deleteNamed(name string) error {
	path := filepath.Join(RunDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		if errors.Is(err, unix.ENOENT) {
			return os.ErrNotExist
		}
		return err
	}
	err := os.Remove(path)
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("%w: another mount of the namespace lies beneath the name (something mounted over %s while it existed)", err, RunDir)
	}
	return err
}
