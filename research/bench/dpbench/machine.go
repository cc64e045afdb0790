package dpbench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Machine describes where a run happened, for the generated document.
type Machine struct {
	CPU      string    `json:"cpu"`
	CPUs     int       `json:"cpus"`
	Kernel   string    `json:"kernel"`
	MemoryGB float64   `json:"memory_gb"`
	Virtual  string    `json:"virtualization,omitempty"` // from /proc/cpuinfo's hypervisor flag
	Load     [3]string `json:"load_at_start"`            // 1, 5, 15 minutes
	Started  time.Time `json:"started"`
	Go       string    `json:"go"`
}

// DescribeMachine reads the CPU model, CPU count, kernel, memory and load.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Started: time.Now().UTC(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, ok := strings.Cut(s.Text(), ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case !ok:
			case k == "model name" && m.CPU == "":
				m.CPU = v
			case k == "flags" && m.Virtual == "" && strings.Contains(" "+v+" ", " hypervisor "):
				m.Virtual = "virtual machine (hypervisor flag set)"
			}
		}
		f.Close()
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.MemoryGB = float64(si.Totalram) * float64(si.Unit) / (1 << 30)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = [3]string{f[0], f[1], f[2]}
		}
	}
	return m
}

// LoadNow is the 1-minute load average now.
func LoadNow() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
