package dataplane

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PinsDieWithProcess tells, with the reason, whether pins this process
// makes under BPFFSRoot will die with it, so that a crashed daemon's pinned
// program stops forwarding instead of outliving it as the docs promise.
//
// That happens when the process runs in a mount namespace of its own whose
// /sys/fs/bpf is not the bpffs its starter sees: `ip netns exec` unshares
// the mount namespace and mounts a fresh sysfs on /sys, so /sys/fs/bpf is
// empty there and the daemon mounts a private bpffs, destroyed with the
// namespace when the process exits. (A systemd unit with PrivateTmp also
// has a mount namespace of its own, but sees the host's bpffs: fine.)
//
// The starter is the nearest ancestor in another mount namespace. Nothing
// is reported when none is found or it cannot be read (the check then
// cannot tell, and stays quiet).
func PinsDieWithProcess() (bool, string) {
	return pinsDieWith("/proc", os.Getpid())
}

func pinsDieWith(proc string, pid int) (bool, string) {
	mine, err := os.Readlink(fmt.Sprintf("%s/%d/ns/mnt", proc, pid))
	if err != nil {
		return false, ""
	}
	starter := 0
	for p, hops := pid, 0; hops < 64; hops++ {
		pp, err := parentPID(proc, p)
		if err != nil || pp <= 0 {
			return false, ""
		}
		ns, err := os.Readlink(fmt.Sprintf("%s/%d/ns/mnt", proc, pp))
		if err != nil {
			return false, ""
		}
		if ns != mine {
			starter = pp
			break
		}
		if pp == 1 {
			return false, "" // the whole ancestry shares this mount namespace
		}
		p = pp
	}
	if starter == 0 {
		return false, ""
	}
	var st, theirs unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("%s/%d/root%s", proc, starter, BPFFSRoot), &theirs); err != nil {
		return false, "" // cannot see the starter's files
	}
	var fs unix.Statfs_t
	if unix.Statfs(BPFFSRoot, &fs) != nil || fs.Type != unix.BPF_FS_MAGIC {
		return true, fmt.Sprintf("this process runs in a mount namespace of its own (not that of process %d that started it) with no bpffs at %s: the one the daemon mounts dies with the process", starter, BPFFSRoot)
	}
	if unix.Stat(BPFFSRoot, &st) != nil || st.Dev != theirs.Dev {
		return true, fmt.Sprintf("this process runs in a mount namespace of its own (not that of process %d that started it) whose bpffs at %s is not the one its starter sees: it dies with the process", starter, BPFFSRoot)
	}
	return false, ""
}

// parentPID reads the PPid line of /proc/PID/status.
func parentPID(proc string, pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("%s/%d/status", proc, pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s/%d/status: no PPid", proc, pid)
}
