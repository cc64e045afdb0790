package netlab

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// namePrefix starts every namespace this package creates.
const namePrefix = "bmr"

// owner identifies the process that made a namespace: its pid and its start
// time (clock ticks after boot, from /proc/PID/stat). The pid alone cannot
// tell a killed run from a later process that got the same pid; the pair
// can. Every process of one PID namespace agrees on both, which is all the
// runs sharing a host's /run/netns need (parallel test packages included).
type owner struct {
	pid   int
	start uint64
}

// selfOwner is the calling process.
func selfOwner() (owner, error) {
	p, err := procfs.Self()
	if err != nil {
		return owner{}, fmt.Errorf("netlab: %w", err)
	}
	st, err := p.Stat()
	if err != nil {
		return owner{}, fmt.Errorf("netlab: %w", err)
	}
	return owner{pid: p.PID, start: st.Starttime}, nil
}

// prefix starts the names of the owner's namespaces: bmr<pid>t<start, hex>x.
// Hex digits have no 't' or 'x', so the name parses back.
func (o owner) prefix() string {
	return fmt.Sprintf("%s%dt%xx", namePrefix, o.pid, o.start)
}

// OwnerPrefix starts the name of every namespace a process with this pid
// makes, whatever its start time: bmr<pid>t.
func OwnerPrefix(pid int) string { return fmt.Sprintf("%s%dt", namePrefix, pid) }

// parseOwner reads the owner out of a namespace name. Names of older
// versions (bmr<pid>x…) carry no start time: hasStart is false.
func parseOwner(name string) (o owner, hasStart, ok bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return owner{}, false, false
	}
	id, _, ok := strings.Cut(rest, "x")
	if !ok {
		return owner{}, false, false
	}
	pidStr, startStr, hasStart := strings.Cut(id, "t")
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return owner{}, false, false
	}
	o.pid = pid
	if hasStart {
		if o.start, err = strconv.ParseUint(startStr, 16, 64); err != nil {
			return owner{}, false, false
		}
	}
	return o, hasStart, true
}

// alive reports whether the owner still runs. A process that is gone, a
// zombie (it will clean up nothing) and a different process under the same
// pid are dead; whatever cannot be told for sure counts as alive, so that
// nothing of a live run is ever removed.
func (o owner) alive(checkStart bool) bool {
	p, err := procfs.NewProc(o.pid)
	var st procfs.ProcStat
	if err == nil {
		st, err = p.Stat()
	}
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH)
	}
	if st.State == "Z" {
		return false
	}
	return !checkStart || st.Starttime == o.start
}

// SweepStale removes namespaces named by this package whose owning process
// has exited (a run that was killed before it could clean up), and first
// ends the processes still running inside them (daemons that run was
// running there): a namespace without its name lives on while a process
// holds it. Namespaces of live runs, this one's included, stay.
func SweepStale() {
	entries, _ := filepath.Glob(filepath.Join(RunDir, namePrefix+"*"))
	for _, path := range entries {
		name := filepath.Base(path)
		o, hasStart, ok := parseOwner(name)
		if !ok || o.alive(hasStart) {
			continue
		}
		killInside(path)
		deleteNamed(name)
	}
}
