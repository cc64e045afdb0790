package netlab_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// freshEnv names the test that a child process of the test binary runs in
// a fresh /run/netns (see inFreshRunDir).
const freshEnv = "BEAMER_NETLAB_FRESH_RUN_DIR"

// holdEnv turns the test binary into a holder: a run that makes a namespace,
// runs a process in it and keeps both until its stdin closes (see hold).
const holdEnv = "BEAMER_NETLAB_HOLD"

// freshRun is the id of the tmpfs mounted on /run in the child process:
// mounts below it are the child's own, others are copies of the host's,
// hidden beneath it.
var freshRun int

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		os.Exit(hold())
	}
	os.Exit(m.Run())
}

// inFreshRunDir runs body in a child process of the test binary with a mount
// namespace of its own (every mount in it private: nothing it mounts reaches
// the host, nothing the host mounts reaches it) and a tmpfs on /run, so that
// /run/netns starts as a plain directory, as on a freshly booted machine,
// whatever this machine's own /run/netns is. Whatever the child leaves
// mounted there goes with its mount namespace when it exits.
func inFreshRunDir(t *testing.T, body func(t *testing.T)) {
	if os.Getenv(freshEnv) == t.Name() {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755,size=16m"); err != nil {
			t.Fatal(err)
		}
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, "/run", 0, unix.STATX_MNT_ID, &stx); err != nil {
			t.Fatal(err)
		}
		freshRun = int(stx.Mnt_id)
		if err := os.Mkdir(netlab.RunDir, 0o755); err != nil {
			t.Fatal(err)
		}
		body(t)
		return
	}
	netlabtest.RequireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1", "-test.timeout=80s")
	cmd.Env = append(os.Environ(), freshEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace with a fresh %s:\n%s", netlab.RunDir, out)
	if err != nil {
		t.Fatalf("the child run failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the child run did not pass %s", t.Name())
	}
}

// TestNamespacesSurviveIPNetnsAdd: a lab builds a topology while another
// program creates and deletes namespaces with `ip netns add/del` in a loop,
// starting from a /run/netns that is a plain directory (a fresh machine).
// Every namespace of the lab stays reachable by its name and is the one the
// lab made, traffic flows, the lab removes all of them, and no namespace
// mount is left anywhere under /run/netns (none hidden beneath another
// mount). Before namespaces were created the way iproute2 does, the first
// `ip netns add` put its mount over the lab's: removing them failed with
// "device or resource busy" and they leaked.
func TestNamespacesSurviveIPNetnsAdd(t *testing.T) {
	inFreshRunDir(t, func(t *testing.T) {
		lab := netlabtest.New(t, "ipadd")
		hub := mustNamespace(t, lab, "hub")
		first := mustNamespace(t, lab, "first")
		mustVeth(t, lab, hub, "v0", first, 0)
		if top := topRunDirMount(t); top == nil {
			t.Errorf("%s is not a mount point of its own after the lab made namespaces", netlab.RunDir)
		} else if _, shared := top.OptionalFields["shared"]; !shared {
			t.Errorf("%s is a mount point but not shared", netlab.RunDir)
		}

		// Another program now makes and removes namespaces with iproute2,
		// while the lab adds more.
		churn := startIPChurn(t, 40, 20*time.Second)
		spokes := []*netlab.Namespace{first}
		for i := 1; i <= 6; i++ {
			ns := mustNamespace(t, lab, fmt.Sprintf("n%d", i))
			mustVeth(t, lab, hub, fmt.Sprintf("v%d", i), ns, i)
			spokes = append(spokes, ns)
		}
		if err := churn.cmd.Wait(); err != nil {
			t.Fatalf("ip netns add/del loop: %v\n%s", err, churn.out.String())
		}
		t.Logf("ip netns add/del loop: %s", strings.TrimSpace(churn.out.String()))

		if at := runDirMounts(t); len(at) != 1 {
			t.Errorf("%d mounts at %s, want 1: %v", len(at), netlab.RunDir, at)
		}
		for _, ns := range append([]*netlab.Namespace{hub}, spokes...) {
			checkNamed(t, ns)
		}
		checkTCP(t, hub, spokes)

		if err := lab.Close(); err != nil {
			t.Fatalf("removing the lab's namespaces: %v", err)
		}
		left, _ := os.ReadDir(netlab.RunDir)
		for _, e := range left {
			t.Errorf("left in %s: %s", netlab.RunDir, e.Name())
		}
		for _, m := range namespaceMounts(t) {
			t.Errorf("namespace mount left at %s (mount %d, under mount %d)", m.MountPoint, m.MountID, m.ParentID)
		}
	})
}

// TestSweepRemovesDeadRunsOnly: the next run removes the namespaces of a
// killed run (and ends the process the killed run left inside), of a
// process that had a live process's pid but is not it (a reused pid), and
// of an older version's dead run; it keeps those of a live run in another
// process, its own, and an older version's live run.
func TestSweepRemovesDeadRunsOnly(t *testing.T) {
	inFreshRunDir(t, func(t *testing.T) {
		// Four runs start at once; one of them gives RunDir its mount,
		// the others find it (a lock keeps two from both mounting).
		holders := make([]*holder, 4)
		var wg sync.WaitGroup
		errs := make([]error, len(holders))
		for i := range holders {
			wg.Go(func() { holders[i], errs[i] = tryStartHolder(t) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if at := runDirMounts(t); len(at) != 1 {
			t.Errorf("%d mounts at %s after four runs started at once, want 1: %v", len(at), netlab.RunDir, at)
		}
		dead, live := holders[0], holders[1]
		dead.cmd.Process.Kill()
		dead.cmd.Wait()

		pid, start, ok := netlab.OwnerOf(live.name)
		if !ok {
			t.Fatalf("no owner in the name %s", live.name)
		}
		reusedLab := netlab.NewOwnedBy(pid, start+1, "reused")
		reused, err := reusedLab.Namespace("ns")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reusedLab.Close() })

		legacyDead := fmt.Sprintf("bmr%dxold-ns", dead.cmd.Process.Pid)
		legacyLive := fmt.Sprintf("bmr%dxold-ns", os.Getpid())
		for _, name := range []string{legacyDead, legacyLive} {
			if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add %s: %v: %s", name, err, out)
			}
			t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		}
		own := mustNamespace(t, netlabtest.New(t, "own"), "ns")

		netlabtest.New(t, "next") // the next run sweeps

		for _, name := range []string{dead.name, reused.Name, legacyDead} {
			if exists(name) {
				t.Errorf("%s was not removed", name)
			}
		}
		for _, name := range []string{live.name, own.Name, legacyLive} {
			if !exists(name) {
				t.Errorf("%s was removed, but its run is alive", name)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for running(dead.inside) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if running(dead.inside) {
			t.Errorf("process %d inside the killed run's namespace still runs", dead.inside)
		}
		if !running(live.inside) {
			t.Errorf("process %d inside the live run's namespace was ended", live.inside)
		}

		// The live run ends as it should: it removes its own.
		live.stdin.Close()
		if err := live.cmd.Wait(); err != nil {
			t.Errorf("live holder: %v", err)
		}
		if exists(live.name) {
			t.Errorf("%s outlived its run", live.name)
		}
	})
}

// holder is a test binary run as a holder (see hold).
type holder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	name   string // its namespace
	inside int    // the process it runs there
}

// tryStartHolder starts a holder and waits for it to say what it holds. It
// may run outside the test's goroutine. The holder is ended when the test
// ends, and the process it runs too if it is still in the held namespace.
func tryStartHolder(t *testing.T) (*holder, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &holder{cmd: cmd, stdin: stdin}
	var heldIno uint64
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		var st syscall.Stat_t
		if h.inside > 0 && syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", h.inside), &st) == nil && st.Ino == heldIno {
			syscall.Kill(h.inside, syscall.SIGKILL)
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- s.Text()
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		if _, err := fmt.Sscanf(l, "holding %s %d", &h.name, &h.inside); err != nil {
			return nil, fmt.Errorf("holder said %q: %v", l, err)
		}
	case <-time.After(20 * time.Second):
		return nil, errors.New("the holder did not start within 20 s")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(netlab.RunDir, h.name), &st); err != nil {
		return nil, err
	}
	heldIno = st.Ino
	return h, nil
}

// hold is the holder's main: make a namespace, start a process in it, say
// both, and remove them when stdin closes.
func hold() int {
	lab, err := netlab.New("held")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lab.Close()
	ns, err := lab.Namespace("ns")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sleep := ns.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sleep.Wait()
	defer sleep.Process.Kill()
	fmt.Printf("holding %s %d\n", ns.Name, sleep.Process.Pid)
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// ipChurn is a process making and removing namespaces with iproute2.
type ipChurn struct {
	cmd *exec.Cmd
	out *strings.Builder // read after cmd.Wait
}

// startIPChurn runs `ip netns add` and `ip netns del` count times each, in
// another process, for at most within.
func startIPChurn(t *testing.T, count int, within time.Duration) *ipChurn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	script := `set -e
for i in $(seq 1 "$1"); do ip netns add "ipchurn-$i"; ip netns del "ipchurn-$i"; done
echo "$1 namespaces added and deleted"`
	cmd := exec.CommandContext(ctx, "bash", "-c", script, "churn", fmt.Sprint(count))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &ipChurn{cmd: cmd, out: out}
}

func mustNamespace(t *testing.T, lab *netlab.Lab, name string) *netlab.Namespace {
	t.Helper()
	ns, err := lab.Namespace(name)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// mustVeth joins hub's device dev to spoke's eth0 with 198.18.9.(4i+1)/30
// and 198.18.9.(4i+2)/30.
func mustVeth(t *testing.T, lab *netlab.Lab, hub *netlab.Namespace, dev string, spoke *netlab.Namespace, i int) {
	t.Helper()
	base := netip.AddrFrom4([4]byte{198, 18, 9, byte(4 * i)})
	if err := lab.Veth(hub, dev, netip.PrefixFrom(base.Next(), 30), spoke, "eth0", netip.PrefixFrom(base.Next().Next(), 30), 0); err != nil {
		t.Fatal(err)
	}
}

// checkNamed: ns's name opens, and what it opens is ns.
func checkNamed(t *testing.T, ns *netlab.Namespace) {
	t.Helper()
	var byName, inside syscall.Stat_t
	if err := syscall.Stat(filepath.Join(netlab.RunDir, ns.Name), &byName); err != nil {
		t.Errorf("%s: %v", ns.Name, err)
		return
	}
	if err := ns.Do(func() error { return syscall.Stat("/proc/thread-self/ns/net", &inside) }); err != nil {
		t.Fatal(err)
	}
	if byName.Ino != inside.Ino || byName.Dev != inside.Dev {
		t.Errorf("%s names namespace %d, the lab made %d", ns.Name, byName.Ino, inside.Ino)
	}
}

// checkTCP: every spoke connects to the hub over its own link and gets an
// echo back.
func checkTCP(t *testing.T, hub *netlab.Namespace, spokes []*netlab.Namespace) {
	t.Helper()
	var l net.Listener
	if err := hub.Do(func() (err error) { l, err = net.Listen("tcp4", "0.0.0.0:0"); return err }); err != nil {
		t.Fatal(err)
	}
	netlabtest.Serve(t, l, func(c net.Conn) { io.Copy(c, c) })
	port := l.Addr().(*net.TCPAddr).Port
	for i, ns := range spokes {
		hubAddr := netip.AddrFrom4([4]byte{198, 18, 9, byte(4*i + 1)})
		var c net.Conn
		err := ns.Do(func() (err error) {
			c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(hubAddr, uint16(port)).String(), 10*time.Second)
			return err
		})
		if err != nil {
			t.Errorf("%s to the hub: %v", ns.Name, err)
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 5)
		if _, err := c.Write([]byte("hello")); err == nil {
			_, err = io.ReadFull(c, buf)
		}
		if err != nil || string(buf) != "hello" {
			t.Errorf("%s to the hub: echo %q, %v", ns.Name, buf, err)
		}
		c.Close()
	}
}

// topRunDirMount is the mount one sees at RunDir, nil if none.
func topRunDirMount(t *testing.T) *procfs.MountInfo {
	t.Helper()
	top, err := netlab.RunDirTop()
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// namespaceMounts lists the mounts below RunDir in the fresh /run, seen or
// hidden.
func namespaceMounts(t *testing.T) []*procfs.MountInfo {
	t.Helper()
	return freshMounts(t, func(at string) bool { return strings.HasPrefix(at, netlab.RunDir+"/") })
}

// runDirMounts lists the mounts at RunDir in the fresh /run: one, or
// several lying over each other.
func runDirMounts(t *testing.T) []*procfs.MountInfo {
	t.Helper()
	return freshMounts(t, func(at string) bool { return at == netlab.RunDir })
}

// freshMounts lists the mounts in the fresh /run whose mount point matches.
func freshMounts(t *testing.T, match func(mountPoint string) bool) []*procfs.MountInfo {
	t.Helper()
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, m := range mounts {
		parent[m.MountID] = m.ParentID
	}
	inFreshRun := func(id int) bool {
		for range len(mounts) { // a chain of parents is no longer than the list
			if id == freshRun {
				return true
			}
			p, ok := parent[id]
			if !ok || p == id {
				return false
			}
			id = p
		}
		return false
	}
	var under []*procfs.MountInfo
	for _, m := range mounts {
		if match(m.MountPoint) && inFreshRun(m.MountID) {
			under = append(under, m)
		}
	}
	return under
}

func exists(name string) bool {
	_, err := os.Lstat(filepath.Join(netlab.RunDir, name))
	return err == nil
}

// running: the process exists and is not a zombie.
func running(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}
