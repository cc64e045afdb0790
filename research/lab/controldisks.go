package lab

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Controller host disks: with Options.ControlHostDisks each controller
// host's store member keeps its data (the embedded member's directory,
// or the ZooKeeper server's snapshots and transaction log) on a small
// ext4 filesystem of its own, a sparse image file in the lab's directory
// on a loop device, so that a fault rig can make that one member's disk
// fail (FailDisk) while the others' go on. Failing is ext4's shutdown
// ioctl: every later write and fsync fails with EIO, as when a real
// server's disk goes away or ext4 remounts it read-only after errors
// (a read-only remount itself is refused while the member holds files
// open for writing, and a loop device set read-only still takes
// writes). ReplaceDisk heals it as an operator would: the member
// stopped, the filesystem unmounted and mounted again (its journal
// replayed), the member started again.

// controlDiskSize is each member's filesystem: room for etcd's and
// ZooKeeper's 64 MiB preallocated log segments and their snapshots; the
// image is sparse, so it costs what is written.
const controlDiskSize = 512 << 20

// fsIOCShutdown is FS_IOC_SHUTDOWN (_IOR('X', 125, __u32), the same
// number as EXT4_IOC_SHUTDOWN) and shutdownLogFlush its flag that
// flushes the journal first: the filesystem stays consistent, and
// everything written after fails.
const (
	fsIOCShutdown    = 0x8004587d
	shutdownLogFlush = 0x1
)

// controlDisk is one controller host's member filesystem.
type controlDisk struct {
	image, dev, mnt string
	mounted         bool
}

// RequireLoopDevices says why the machine cannot give controller hosts
// disks of their own ("" when it can): Options.ControlHostDisks needs
// root, loop devices, mkfs.ext4 and losetup.
func RequireLoopDevices() string {
	if os.Geteuid() != 0 {
		return "controller host disks need root (loop devices, mount)"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return "controller host disks need loop devices (/dev/loop-control: " + err.Error() + "; modprobe loop)"
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "blockdev"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "controller host disks need " + tool + " (util-linux, e2fsprogs)"
		}
	}
	return ""
}

// newControlDisk makes an ext4 filesystem in a sparse image under dir,
// attaches it to a free loop device and mounts it on mnt (created).
// On error, whatever was made is undone.
func newControlDisk(dir, name, mnt string) (d *controlDisk, err error) {
	d = &controlDisk{image: filepath.Join(dir, name+".img"), mnt: mnt}
	defer func() {
		if err != nil {
			d.release()
			d = nil
		}
	}()
	f, err := os.OpenFile(d.image, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return d, err
	}
	err = f.Truncate(controlDiskSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return d, err
	}
	if err := run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1", d.image); err != nil {
		return d, err
	}
	out, err := exec.Command("losetup", "--find", "--show", d.image).CombinedOutput()
	if err != nil {
		return d, fmt.Errorf("losetup %s: %w: %s", d.image, err, out)
	}
	d.dev = strings.TrimSpace(string(out))
	// A loop device keeps a read-only flag across attachments (set by
	// blockdev --setro before): clear it, or ext4 mounts read-only.
	if err := run("blockdev", "--setrw", d.dev); err != nil {
		return d, err
	}
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return d, err
	}
	return d, d.mount()
}

func (d *controlDisk) mount() error {
	if err := unix.Mount(d.dev, d.mnt, "ext4", 0, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", d.dev, d.mnt, err)
	}
	d.mounted = true
	return nil
}

// shareDir bind-mounts dir on itself, shared, before the disks are
// mounted under it. Every process the lab starts runs in a mount
// namespace of its own (`ip netns exec` copies the mounts, as slaves):
// under a private parent (this machine's / is private) each copy would
// keep a disk's filesystem — shut down — alive after the lab unmounts
// it, and mounting it again would find the same dead filesystem instead
// of replaying its journal. Under a shared parent the unmount reaches
// every copy (checked on this kernel).
func shareDir(dir string) error {
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		return errors.Join(fmt.Errorf("making %s shared: %w", dir, err), unmount(dir))
	}
	return nil
}

// fail shuts the filesystem down: every later write and fsync on it
// fails with EIO.
func (d *controlDisk) fail() error {
	fd, err := unix.Open(d.mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	flag := uint32(shutdownLogFlush)
	if err := unix.IoctlSetPointerInt(fd, fsIOCShutdown, int(flag)); err != nil {
		return fmt.Errorf("shutting %s down (FS_IOC_SHUTDOWN): %w", d.mnt, err)
	}
	return nil
}

// remount unmounts the filesystem and mounts it again (ext4 replays its
// journal); nothing may hold a file on it.
func (d *controlDisk) remount() error {
	if d.mounted {
		if err := unmount(d.mnt); err != nil {
			return err
		}
		d.mounted = false
	}
	return d.mount()
}

// release unmounts, detaches the loop device and removes the image.
func (d *controlDisk) release() error {
	var errs []error
	if d.mounted {
		if err := unmount(d.mnt); err != nil {
			errs = append(errs, err)
		} else {
			d.mounted = false
		}
	}
	if d.dev != "" && !d.mounted {
		if err := run("losetup", "--detach", d.dev); err != nil {
			errs = append(errs, err)
		} else {
			d.dev = ""
		}
	}
	if d.dev == "" {
		os.Remove(d.image)
	}
	return errors.Join(errs...)
}

// unmount retries a busy unmount for a while: a member's process just
// killed may not have closed its files yet.
func unmount(mnt string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := unix.Unmount(mnt, 0)
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("unmount %s: %w", mnt, err)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// FailDisk makes controller host i's store member's disk fail: every
// further write and fsync there fails with EIO.
func (l *Lab) FailDisk(i int) error {
	h, err := l.controlHost(i)
	if err != nil {
		return err
	}
	if h.disk == nil {
		return fmt.Errorf("controller host %d has no disk of its own (Options.ControlHostDisks)", i)
	}
	return h.disk.fail()
}

// ReplaceDisk heals FailDisk as an operator would: it stops host i's
// store member (with the embedded store, the controller it runs in; if
// the member did not exit on the failure by itself), unmounts the
// filesystem and mounts it again, which replays its journal, and starts
// the member again.
func (l *Lab) ReplaceDisk(i int) error {
	h, err := l.controlHost(i)
	if err != nil {
		return err
	}
	if h.disk == nil {
		return fmt.Errorf("controller host %d has no disk of its own (Options.ControlHostDisks)", i)
	}
	member := h.ctl
	if h.zk != nil {
		member = h.zk
	}
	member.stop(5 * time.Second)
	if err := h.disk.remount(); err != nil {
		return err
	}
	if h.zk != nil {
		h.restarts++
		p, err := l.startEnsembleServer(l.ctlDir, i, len(l.ctls), fmt.Sprintf("zookeeper%d-%d", i, h.restarts))
		if err != nil {
			return err
		}
		l.procs.add(p)
		h.zk = p
		return nil
	}
	return l.RestartController(i)
}

// ZooKeeperMode is what controller host i's ZooKeeper server says of
// itself (the four-letter word srvr): "Mode: follower", "Mode: leader",
// or why it did not answer; "" without a ZooKeeper server there.
func (l *Lab) ZooKeeperMode(i int) string {
	if h, err := l.controlHost(i); err != nil || h.zk == nil {
		return ""
	}
	var out string
	err := l.ctls[i].Do(func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", controlHostAddr(i), zkClientPort), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("srvr")); err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(c, 4096))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Mode:") {
				out = strings.TrimSpace(line)
				return nil
			}
		}
		if err == nil {
			err = fmt.Errorf("answered %q", strings.TrimSpace(string(b)))
		}
		return err
	})
	if err != nil {
		return "srvr: " + err.Error()
	}
	return out
}

// MemberExit says how controller host i's store member (the ZooKeeper
// server, or the controller that embeds the etcd member) ended: "" while
// it runs, else its exit status and the last line of its log.
func (l *Lab) MemberExit(i int) string {
	h, err := l.controlHost(i)
	if err != nil {
		return err.Error()
	}
	p := h.ctl
	if h.zk != nil {
		p = h.zk
	}
	select {
	case <-p.done:
	default:
		return ""
	}
	tail := strings.TrimSpace(p.tail(600))
	if k := strings.LastIndexByte(tail, '\n'); k >= 0 {
		tail = tail[k+1:]
	}
	return fmt.Sprintf("%s exited (%v): %s", p.name, p.err, tail)
}

// releaseDisks unmounts and detaches every controller host's disk (the
// processes on them stopped first).
func (l *Lab) releaseDisks() error {
	var errs []error
	for _, d := range l.disks {
		errs = append(errs, d.release())
	}
	if l.disksShared != "" {
		if err := unmount(l.disksShared); err != nil {
			errs = append(errs, err)
		} else {
			l.disksShared = ""
		}
	}
	return errors.Join(errs...)
}
