package beamercli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ctl create's cheetah options: refused for other strategies and when
// malformed, with these messages, before anything is submitted.
func TestCtlCheetahRejections(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := file("bad", "xyz", 0o600)
	zero := file("zero", "00000000000000000000000000000000", 0o600)
	open := file("open", "0123456789abcdeffedcba9876543210", 0o644)
	cases := []struct{ args, want string }{
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --policy rr", "--policy and --cheetah-keys-file are options of --strategy cheetah"},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --policy random",
			`invalid instance configuration "web": cheetah policy "random" is not rr, wrr, p2c or hash`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys-file " + bad,
			`cheetah key of 3 characters: want 32 hex digits (the key itself is not repeated here: it is a secret)`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys-file " + zero,
			`invalid instance configuration "web": cheetah current key is all zero: a client could compute cookies`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys-file " + open,
			"--cheetah-keys-file " + open + ": mode 0644 lets others read a secret: chmod 600 " + open},
		// Keys are never a flag value (ps shows them).
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys 0123456789abcdeffedcba9876543210",
			"unknown flag: --cheetah-keys"},
	}
	for _, c := range cases {
		err := run(strings.Fields(c.args)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("beamer %s:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
}

func TestParseCheetahKeys(t *testing.T) {
	k0 := "0123456789abcdeffedcba9876543210"
	ks, err := parseCheetahKeys(k0 + ",deadbeef0badf00d123456789e3779b9,1")
	if err != nil || ks.Current != 1 || ks.Keys[0].String() != k0 {
		t.Fatalf("%+v %v", ks, err)
	}
	if ks, err = parseCheetahKeys(""); err != nil || ks.Keys[0] == ks.Keys[1] {
		t.Fatalf("random keys: %+v %v", ks, err)
	}
	if _, err := parseCheetahKeys(k0 + "," + k0 + ",2"); err == nil {
		t.Fatal("current key id 2 accepted")
	}
}
