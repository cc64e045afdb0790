package netlab

// NewOwnedBy is a lab whose namespaces are named as if the process pid,
// started at start, had made them.
func NewOwnedBy(pid int, start uint64, tag string) *Lab {
	return newOwnedBy(owner{pid: pid, start: start}, tag)
}

// OwnerOf reads the owner's pid and start time out of a namespace name.
func OwnerOf(name string) (pid int, start uint64, ok bool) {
	o, hasStart, ok := parseOwner(name)
	return o.pid, o.start, ok && hasStart
}

// RunDirTop is the mount one sees at RunDir, nil if none.
var RunDirTop = runDirTop
