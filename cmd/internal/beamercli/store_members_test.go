package beamercli

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestStoreMembers: `beamer store members` lists a 3-member embedded
// cluster through a client URL naming every member, `add` prints the
// parameters the new member starts with, `remove` takes the added member
// (never started, so by its peer address) out again; ZooKeeper is refused.
func TestStoreMembers(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	ms := storetest.StartCluster(t, c, "a", "b", "c")
	url := fmt.Sprintf("etcd://%s,%s,%s?ca=%s&cert=%s&key=%s", ms[0].ClientAddr, ms[1].ClientAddr, ms[2].ClientAddr, c.CA, c.ClientCert, c.ClientKey)
	var out strings.Builder
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	if err := run("store", "members", "--store", url); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !strings.Contains(out.String(), " "+m.Name+" ") || !strings.Contains(out.String(), "https://"+m.PeerAddr) || !strings.Contains(out.String(), m.Endpoint()) {
			t.Errorf("member list lacks %s:\n%s", m.Name, out.String())
		}
	}
	peer := storetest.FreeAddrs(t, 1)[0]
	out.Reset()
	if err := run("store", "members", "add", "d", peer, "--store", url); err != nil {
		t.Fatal(err)
	}
	want := "name=d&initial-cluster="
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "d=https://"+peer) ||
		!strings.Contains(out.String(), "a=https://"+ms[0].PeerAddr) || !strings.HasSuffix(out.String(), "&cluster-state=existing\n") {
		t.Errorf("add printed:\n%s", out.String())
	}
	out.Reset()
	if err := run("store", "members", "--store", url); err != nil || !strings.Contains(out.String(), "(not started)") {
		t.Errorf("list after add: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run("store", "members", "remove", peer, "--store", url); err != nil || !strings.Contains(out.String(), "removed member") {
		t.Errorf("remove: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run("store", "members", "--store", url); err != nil || strings.Contains(out.String(), "(not started)") {
		t.Errorf("list after remove: %v\n%s", err, out.String())
	}
	if err := run("store", "members", "--store", "zk://127.0.0.1:2181"); err == nil || !strings.Contains(err.Error(), "ZooKeeper") {
		t.Errorf("members of ZooKeeper: %v", err)
	}
	if err := run("store", "members", "--store", "embed://"+t.TempDir()); err == nil || !strings.Contains(err.Error(), "no beamer process serves") {
		t.Errorf("members of an embedded store nobody serves: %v", err)
	}
}
