package main

import (
	"strings"
	"testing"
)

// ctl create's cheetah options: refused for other strategies and when
// malformed, with these messages, before anything is submitted.
func TestCtlCheetahRejections(t *testing.T) {
	cases := []struct{ args, want string }{
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --policy rr", "--policy and --cheetah-keys are options of --strategy cheetah"},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --policy random",
			`invalid instance configuration "web": cheetah policy "random" is not rr, wrr, p2c or hash`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys xyz",
			`cheetah key "xyz": want 32 hex digits`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --cheetah-keys 00000000000000000000000000000000",
			`invalid instance configuration "web": cheetah current key is all zero: a client could compute cookies`},
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
