package nodestate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SweepStale removes the records (in dir) and pin directories (in pinRoot)
// of daemons whose network namespace no longer exists — killed together
// with their namespace, as a lab torn down hard does. The kernel state they
// describe went with the namespace, and a later namespace that gets the
// same inode number must not inherit them. A pin directory whose program
// is still attached somewhere (attached says so) is kept whatever the
// namespace scan says: a namespace can be kept alive by a bind mount this
// scan does not know, and removing the pins would detach a live program.
func SweepStale(dir, pinRoot string, attached func(pinDir string) bool) {
	live := liveNetns()
	if len(live) == 0 {
		return // could not tell: keep everything
	}
	stale := func(name string) bool {
		// ROLE-NETNS-IFACE, as Name makes them.
		parts := strings.SplitN(name, "-", 3)
		if len(parts) != 3 || (parts[0] != "mux" && parts[0] != "agent") || live[parts[1]] {
			return false
		}
		return !attached(filepath.Join(pinRoot, name))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		// The record, and the agent's lock beside it (agentd).
		if name, ok := strings.CutSuffix(strings.TrimSuffix(e.Name(), ".lock"), ".json"); ok && stale(name) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	entries, _ = os.ReadDir(pinRoot)
	for _, e := range entries {
		if stale(e.Name()) {
			os.RemoveAll(filepath.Join(pinRoot, e.Name()))
		}
	}
}

// liveNetns lists the inodes of the network namespaces any thread is in or
// a name under /var/run/netns is bound to.
func liveNetns() map[string]bool {
	live := map[string]bool{}
	add := func(path string) {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			live[strconv.FormatUint(st.Ino, 10)] = true
		}
	}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/ns/net")
	for _, p := range tasks {
		add(p)
	}
	named, _ := filepath.Glob("/var/run/netns/*")
	for _, p := range named {
		add(p)
	}
	return live
}
