package storeurl

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]Target{
		"embed:///var/lib/beamer":                    {Scheme: "embed", Dir: "/var/lib/beamer", Root: "/beamer"},
		"etcd://a:2379,b:2379?root=/lb":              {Scheme: "etcd", Hosts: []string{"a:2379", "b:2379"}, Root: "/lb"},
		"zk://admin@z1:2181?session-timeout=5s":      {Scheme: "zk", Hosts: []string{"z1:2181"}, User: "admin", Root: "/beamer"},
		"etcd://h:1/?ca=/x.pem&cert=/c.pem&key=/k.p": {Scheme: "etcd", Hosts: []string{"h:1"}, Root: "/beamer"},
	}
	for raw, want := range good {
		got, err := Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if got.Scheme != want.Scheme || got.Dir != want.Dir || got.Root != want.Root || got.User != want.User ||
			strings.Join(got.Hosts, ",") != strings.Join(want.Hosts, ",") {
			t.Errorf("%s: got %+v", raw, got)
		}
	}
	bad := map[string]string{
		"http://h:1":                "scheme",
		"etcd://h":                  "needs a port",
		"etcd://u:secret@h:1":       "password",
		"zk://h:1?colour=red":       "unknown parameter",
		"embed://relative/dir":      "three slashes",
		"etcd://h:1?timeout=soon":   "timeout",
		"zk://h:1?root=/":           "root",
		"etcd://h:1/some/path":      "root=",
		"zk://h:1?session-timeout=": "",
	}
	for raw, want := range bad {
		_, err := Parse(raw)
		if want == "" {
			continue // accepted: empty value means default
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", raw, err, want)
		}
	}
}
