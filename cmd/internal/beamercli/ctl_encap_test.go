package beamercli

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestCtlEncapRejections: a bad encapsulation is refused by ctl create
// before anything is submitted, with a message naming what to do.
func TestCtlEncapRejections(t *testing.T) {
	base := "ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 "
	for args, want := range map[string]string{
		base + "--encap vxlan":             `invalid instance configuration "web": encap "vxlan" must be ipip or gue`,
		base + "--gue-port 7000":           `invalid instance configuration "web": gue_port 7000 set, but encap is ipip (set encap: gue)`,
		base + "--encap ipip --gue-port 1": `invalid instance configuration "web": gue_port 1 set, but encap is ipip (set encap: gue)`,
		base + "--encap gue --gue-port 0":  "--gue-port 0: a port is 1–65535",
	} {
		if err := run(strings.Fields(args)...); err == nil || err.Error() != want {
			t.Errorf("beamer %s:\n got %v\nwant %s", args, err, want)
		}
	}
}

// TestCtlEncapAccepted: encap gue with and without a port passes every
// check and reaches the store through the API (where no controller answers).
func TestCtlEncapAccepted(t *testing.T) {
	api := emptyAPI(t)
	for _, extra := range [][]string{{"--encap", "gue"}, {"--encap", "gue", "--gue-port", "7070"}} {
		args := append([]string{"ctl", "create", "web", "--vip", "198.18.100.1", "--ports", "80", "--buckets", "100", "--api", api, "--timeout", "300ms"}, extra...)
		if err := run(args...); err == nil || !strings.Contains(err.Error(), "no controller is elected on this store") {
			t.Errorf("beamer %s: %v", strings.Join(args, " "), err)
		}
	}
}

func TestEncapSummary(t *testing.T) {
	in := &forwarding.Instance{}
	if s := encapSummary(in); s != "" {
		t.Errorf("ipip: %q", s)
	}
	in.Encap, in.GUEPort = forwarding.EncapGUE, 7070
	if s := encapSummary(in); s != ", encap gue port 7070" {
		t.Errorf("gue: %q", s)
	}
}
