package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
)

// Inventory is everything a lab made that must not outlive it: namespaces
// (by name and by inode, to find processes still inside one), processes,
// and the BPF programs attached inside its namespaces.
type Inventory struct {
	mu         sync.Mutex
	Namespaces map[string]uint64 `json:"namespaces"` // name → network namespace inode
	Pids       []int             `json:"pids"`
	Programs   []ebpf.ProgramID  `json:"bpf_programs"`
	// Disks are controller hosts' filesystems: mount points and the
	// image files behind loop devices (controldisks.go).
	Mounts []string `json:"mounts,omitempty"`
	Images []string `json:"images,omitempty"`
}

func (inv *Inventory) addMount(dir string) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.Mounts = append(inv.Mounts, dir)
}

func (inv *Inventory) addDisk(d *controlDisk) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.Mounts = append(inv.Mounts, d.mnt)
	inv.Images = append(inv.Images, d.image)
}

func (inv *Inventory) addNamespace(ns *netlab.Namespace) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.Namespaces == nil {
		inv.Namespaces = map[string]uint64{}
	}
	var ino uint64
	if fi, err := os.Stat(filepath.Join("/var/run/netns", ns.Name)); err == nil {
		ino = inode(fi)
	}
	inv.Namespaces[ns.Name] = ino
}

var progIDPattern = regexp.MustCompile(`"(?:id|prog_id)":\s*(\d+)`)

// addPrograms records the BPF programs attached in a namespace (XDP, tc).
func (inv *Inventory) addPrograms(ns *netlab.Namespace) {
	out, err := ns.Run("bpftool", "-j", "net", "show")
	if err != nil {
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, m := range progIDPattern.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 32)
		if !slices.Contains(inv.Programs, ebpf.ProgramID(id)) {
			inv.Programs = append(inv.Programs, ebpf.ProgramID(id))
		}
	}
}

// Remaining lists what is left of the inventory: namespaces still named,
// processes still running or still inside one of the lab's namespaces,
// BPF programs still loaded. Empty after a clean Close.
func (inv *Inventory) Remaining() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var left []string
	inodes := map[uint64]string{}
	for name, ino := range inv.Namespaces {
		if _, err := os.Stat(filepath.Join("/var/run/netns", name)); err == nil {
			left = append(left, "namespace "+name)
		}
		if ino != 0 {
			inodes[ino] = name
		}
	}
	for _, pid := range inv.Pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
			left = append(left, fmt.Sprintf("process %d (%s)", pid, cmdline(pid)))
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if name, ok := inodes[inode(fi)]; ok {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			left = append(left, fmt.Sprintf("process %d (%s) in namespace %s", pid, cmdline(pid), name))
		}
	}
	for _, id := range inv.Programs {
		if prog, err := ebpf.NewProgramFromID(id); err == nil {
			info, _ := prog.Info()
			name := ""
			if info != nil {
				name = info.Name
			}
			prog.Close()
			left = append(left, fmt.Sprintf("BPF program %d (%s)", id, name))
		}
	}
	left = append(left, leftDisks(inv.Mounts, inv.Images)...)
	slices.Sort(left)
	return left
}

// leftDisks are the mounts still mounted and the images still attached
// to a loop device.
func leftDisks(mounts, images []string) []string {
	var left []string
	if len(mounts) > 0 {
		info, _ := os.ReadFile("/proc/self/mountinfo")
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 4 && slices.Contains(mounts, f[4]) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if img := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)"); slices.Contains(images, img) {
			left = append(left, fmt.Sprintf("loop device %s (%s)", strings.Split(f, "/")[3], img))
		}
	}
	return left
}

// snapshot copies the inventory (the lab keeps adding to its own).
func (inv *Inventory) snapshot(pids []int) *Inventory {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	c := &Inventory{Namespaces: map[string]uint64{}, Pids: pids, Programs: slices.Clone(inv.Programs),
		Mounts: slices.Clone(inv.Mounts), Images: slices.Clone(inv.Images)}
	for k, v := range inv.Namespaces {
		c.Namespaces[k] = v
	}
	return c
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
