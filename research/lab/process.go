package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// process is a daemon (beamer, FRR, a store server) running inside a
// namespace, its output in a log file of the run directory.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProgram runs `program args…` inside ns.
func startProgram(ns *netlab.Namespace, dir, name, program string, args ...string) (*process, error) {
	return startCmd(ns.Command(program, args...), dir, name)
}

// startCmd starts cmd with extra environment, its output in dir/name.log,
// in its own process group (so a Ctrl-C meant for the lab reaches it only
// through the lab's orderly stop).
func startCmd(cmd *exec.Cmd, dir, name string, env ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// tail is the end of the process's log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// exited reports whether the process is gone, with its log's tail.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.tail(2000))
	default:
		return nil
	}
}

// stop ends the process: SIGTERM, then SIGKILL after a grace period.
func (p *process) stop(grace time.Duration) {
	if p.cmd.Process == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// processes stops a set of processes in reverse order of start.
type processes struct {
	mu   sync.Mutex
	list []*process
	pids []int // every process ever started, for the clean-up check
}

func (ps *processes) add(p *process) {
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.pids = append(ps.pids, p.cmd.Process.Pid)
	ps.mu.Unlock()
}

func (ps *processes) started() []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]int(nil), ps.pids...)
}

func (ps *processes) stopAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i := len(ps.list) - 1; i >= 0; i-- {
		ps.list[i].stop(5 * time.Second)
	}
	ps.list = nil
}

// logs returns the tail of every process's log, for a failure report.
func (ps *processes) logs() string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var b strings.Builder
	for _, p := range ps.list {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.log, p.tail(1500))
	}
	return b.String()
}
