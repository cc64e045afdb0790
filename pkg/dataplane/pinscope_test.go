package dataplane

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"golang.org/x/sys/unix"
)

// pinScopeChild is set in the environment of the test binary run again
// inside a new mount namespace: "ipnetns" remounts /sys as `ip netns exec`
// does, "shared" keeps the copy of the starter's mounts (as a systemd unit
// with a private mount namespace sees them).
const pinScopeChild = "BEAMER_TEST_PINSCOPE_CHILD"

// TestPinsDieWithProcess: a process started the way `ip netns exec` starts
// it (a mount namespace of its own with a fresh sysfs on /sys) is found to
// have pins that die with it; one in a mount namespace of its own that
// still sees its starter's bpffs is not.
func TestPinsDieWithProcess(t *testing.T) {
	if mode := os.Getenv(pinScopeChild); mode != "" {
		if mode == "ipnetns" {
			// What `ip netns exec` does after unsharing the mount
			// namespace (exec made every mount private first).
			if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil {
				t.Fatalf("umount /sys: %v", err)
			}
			if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
				t.Fatalf("mount sysfs: %v", err)
			}
		}
		die, why := PinsDieWithProcess()
		t.Logf("PINSCOPE die=%v reason=%s", die, why)
		return
	}
	netlabtest.RequireRoot(t)
	// As the daemons do before pinning: bpffs mounted in this namespace.
	if err := ensureBPFFS(BPFFSRoot); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode    string
		die     bool
		because string
	}{
		{"ipnetns", true, "with no bpffs at /sys/fs/bpf"},
		{"shared", false, ""},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPinsDieWithProcess$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), pinScopeChild+"="+c.mode)
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s child: %v\n%s", c.mode, err, out)
		}
		_, line, ok := strings.Cut(string(out), "PINSCOPE ")
		if !ok {
			t.Fatalf("%s child said nothing:\n%s", c.mode, out)
		}
		line, _, _ = strings.Cut(line, "\n")
		want := "die=false"
		if c.die {
			want = "die=true"
		}
		if !strings.HasPrefix(line, want) || !strings.Contains(line, c.because) {
			t.Errorf("%s: %q, want %s saying %q", c.mode, line, want, c.because)
		}
	}
	// This process shares its starter's mount namespace (go test): quiet.
	if die, why := PinsDieWithProcess(); die {
		t.Logf("the test itself runs in a private mount namespace: %s", why)
	}
}
