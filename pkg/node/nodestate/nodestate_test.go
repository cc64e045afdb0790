package nodestate

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestRecordSurvivesCrash: a daemon changes a sysctl and adds addresses,
// then dies without undoing; its successor opens the same record, changes
// the same sysctl again, and on Undo restores the value from before the
// first daemon — and leaves alone an address that was there before either.
func TestRecordSurvivesCrash(t *testing.T) {
	ns := netlabtest.NewRig(t, "nodestate").Namespace("node")
	const key = "net/ipv4/conf/lo/arp_ignore"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sysctl := func() string {
		out, err := ns.Run("sysctl", "-n", "net.ipv4.conf.lo.arp_ignore")
		must(err)
		return strings.TrimSpace(out)
	}
	must(ns.Sysctl("net.ipv4.conf.lo.arp_ignore", "0"))
	theirs := netip.MustParseAddr("198.18.100.9")
	mine := netip.MustParseAddr("198.18.100.1")
	must(ns.AddAddr("lo", netip.PrefixFrom(theirs, 32)))
	path := filepath.Join(t.TempDir(), "rec.json")

	must(ns.Do(func() error {
		first, err := Open(path)
		if err != nil {
			return err
		}
		if first.Inherited() {
			t.Error("fresh record says inherited")
		}
		if err := first.SetSysctl(key, "1"); err != nil {
			return err
		}
		if err := first.AddLoAddr(mine); err != nil {
			return err
		}
		return first.AddLoAddr(theirs) // already there: not ours
	}))
	// first "dies" here.
	if sysctl() != "1" {
		t.Fatal("sysctl not set")
	}
	must(ns.Do(func() error {
		second, err := Open(path)
		if err != nil {
			return err
		}
		if !second.Inherited() {
			t.Error("record left by a dead daemon not seen as inherited")
		}
		if err := second.SetSysctl(key, "2"); err != nil {
			return err
		}
		if err := second.AddLoAddr(mine); err != nil {
			return err
		}
		return second.Undo()
	}))
	if got := sysctl(); got != "0" {
		t.Errorf("arp_ignore %s after Undo, want 0 from before the first daemon", got)
	}
	out, err := ns.Run("ip", "addr", "show", "lo")
	must(err)
	if strings.Contains(out, mine.String()) {
		t.Errorf("daemon's address left on lo:\n%s", out)
	}
	if !strings.Contains(out, theirs.String()) {
		t.Errorf("address that was there before the daemons removed:\n%s", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("record left after Undo: %v", err)
	}
}

// TestUnreadableRecord: a corrupt record is an error that says what to do,
// not a silent reset (its originals would be lost).
func TestUnreadableRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "unreadable") || !strings.Contains(err.Error(), "remove it after checking") {
		t.Fatalf("corrupt record: %v", err)
	}
}

// TestSweepStale: records and pins of namespaces that are gone are
// removed; those of live namespaces, pins whose program is still attached
// and files of other shapes stay.
func TestSweepStale(t *testing.T) {
	own, err := NetnsID()
	if err != nil {
		t.Fatal(err)
	}
	dir, pins := t.TempDir(), t.TempDir()
	touch := func(p string) {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"mux-" + own + "-eth0.json", "mux-4294967290-eth0.json", "agent-4294967291-eth1.json", "notes.json"} {
		touch(filepath.Join(dir, f))
	}
	for _, d := range []string{"mux-4294967290-eth0", "agent-4294967292-eth0", "mux-" + own + "-eth0"} {
		if err := os.Mkdir(filepath.Join(pins, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	stillAttached := filepath.Join(pins, "agent-4294967292-eth0")
	SweepStale(dir, pins, func(p string) bool { return p == stillAttached })
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for p, want := range map[string]bool{
		filepath.Join(dir, "mux-"+own+"-eth0.json"):      true,
		filepath.Join(dir, "mux-4294967290-eth0.json"):   false,
		filepath.Join(dir, "agent-4294967291-eth1.json"): false,
		filepath.Join(dir, "notes.json"):                 true,
		filepath.Join(pins, "mux-4294967290-eth0"):       false,
		stillAttached:                           true,
		filepath.Join(pins, "mux-"+own+"-eth0"): true,
	} {
		if exists(p) != want {
			t.Errorf("%s exists=%v, want %v", p, !want, want)
		}
	}
}
