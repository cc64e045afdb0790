package dpbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/beamer-lb/beamer/research/netlab"
	"golang.org/x/sys/unix"
)

// Separating the mux's share of a live run from the generator's and the
// sink's. On veth, a receiving interface's XDP program runs in that
// interface's NAPI poll, which by default runs in softirq on whatever CPU
// woke it — the generator's, so all three shared one CPU. With threaded
// NAPI each interface's poll runs in a kernel thread of its own
// ("napi/eth0-N") that can be pinned to a CPU and whose CPU time the
// kernel accounts (/proc/PID/schedstat). The generator is the test-run
// thread itself.

// napiThreads lists the kernel's NAPI threads (pid → name).
func napiThreads() (map[int]string, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*/comm")
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue // gone meanwhile
		}
		if name := strings.TrimSpace(string(b)); strings.HasPrefix(name, "napi/") {
			pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
			out[pid] = name
		}
	}
	return out, nil
}

// threadNAPI turns on threaded NAPI for dev in ns and returns the NAPI
// threads not in before (those of dev: its receive queues; snapshot before
// dev's NAPI was added, e.g. before attaching XDP to a veth), pinned to cpu.
func threadNAPI(ns *netlab.Namespace, dev string, cpu int, before map[int]string) ([]int, error) {
	if _, err := ns.Run("sh", "-c", fmt.Sprintf("echo 1 > /sys/class/net/%s/threaded", dev)); err != nil {
		return nil, err
	}
	after, err := napiThreads()
	if err != nil {
		return nil, err
	}
	var pids []int
	for pid := range after {
		if _, old := before[pid]; !old {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no NAPI thread appeared for %s in %s", dev, ns.Name)
	}
	var set unix.CPUSet
	set.Set(cpu)
	for _, pid := range pids {
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return nil, fmt.Errorf("pinning NAPI thread %d of %s: %w", pid, dev, err)
		}
		// Real-time priority, as the softirq it replaces has over tasks: on
		// a machine busy with other work the poll still runs whenever it
		// has frames (the kernel keeps 5% of each CPU for other tasks).
		if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 50}, 0); err != nil {
			return nil, fmt.Errorf("real-time priority for NAPI thread %d of %s: %w", pid, dev, err)
		}
	}
	return pids, nil
}

// cpuNs is the CPU time (ns) the kernel accounted to the threads so far.
func cpuNs(pids []int) (uint64, error) {
	var sum uint64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return 0, err
		}
		v, err := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// threadCPUNs is the calling thread's CPU time so far.
func threadCPUNs() (uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
}

// ethtoolStats reads `ethtool -S dev` in ns (veth: per-queue XDP counters,
// including frames refused because the peer's ring was full).
func ethtoolStats(ns *netlab.Namespace, dev string) (map[string]uint64, error) {
	out, err := ns.Run("ethtool", "-S", dev)
	if err != nil {
		return nil, err
	}
	st := map[string]uint64{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			st[strings.TrimSpace(k)] = n
		}
	}
	return st, nil
}

// statsDelta is after − before, non-zero entries only.
func statsDelta(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}
