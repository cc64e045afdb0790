package etcdstore

import (
	"net/url"
	"testing"
)

func TestAdvertise(t *testing.T) {
	for _, c := range []struct{ scheme, listen, addr, want string }{
		{"https", "0.0.0.0:2379", "", "https://127.0.0.1:2379"},
		{"http", "127.0.0.1:2379", "", "http://127.0.0.1:2379"},
		{"https", "198.18.0.1:2379", "", "https://198.18.0.1:2379"},
		{"https", "0.0.0.0:2379", "store.example:2379", "https://store.example:2379"},
	} {
		got, err := advertise(c.scheme, &url.URL{Scheme: c.scheme, Host: c.listen}, c.addr)
		if err != nil || got.String() != c.want {
			t.Errorf("%s %s %q: %v, %v; want %s", c.scheme, c.listen, c.addr, got, err, c.want)
		}
	}
	if _, err := advertise("https", &url.URL{Host: "0.0.0.0:2379"}, "no-port"); err == nil {
		t.Error("advertise address without a port accepted")
	}
}
