package mgmtapi_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// memberController is a controller (Run and its API with mutual TLS) on
// one member of a 3-member embedded etcd cluster, its store client
// listing every member with its own first, as `beamer controller` on
// that member's host does.
type memberController struct {
	name, api string
	st        store.Store
	stopAPI   context.CancelFunc
	stopRun   context.CancelFunc
}

// TestStandbysOnClusterMembers: three controllers on the three members of
// an embedded etcd cluster. Through a standby, a change reaches the
// elected controller, and reads (list, show) are answered. With the
// elected controller's API down while it stays elected, the standbys
// still answer reads from the store, and a change through a standby is
// refused with an error naming the elected controller and its address.
// When the elected controller stops, a standby is elected and a change
// through the remaining controllers succeeds.
func TestStandbysOnClusterMembers(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	ms := storetest.StartCluster(t, c, "a", "b", "c")
	certs := t.TempDir()
	if err := nodeauth.Issue(certs, "127.0.0.1", "ctla=controller@127.0.0.1", "ctlb=controller@127.0.0.1", "ctlc=controller@127.0.0.1",
		"alice=admin", "bob=read"); err != nil {
		t.Fatal(err)
	}
	const root = "/mgmtcluster"
	ctls := map[string]*memberController{}
	for i, name := range []string{"ctla", "ctlb", "ctlc"} {
		eps := []string{ms[i].Endpoint()}
		for j, m := range ms {
			if j != i {
				eps = append(eps, m.Endpoint())
			}
		}
		st, err := etcdstore.Open(storetest.Context(t), etcdstore.Config{Endpoints: eps, TLS: c.ClientTLS(t), DialTimeout: 10 * time.Second, LeaseTTL: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		files := nodeauth.FilesIn(certs, name)
		srvTLS, err := nodeauth.ServerConfig(files, nodeauth.RoleController)
		if err != nil {
			t.Fatal(err)
		}
		fwdTLS, err := mgmtapi.ClientTLS(files)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		b := &mgmtapi.StoreBackend{Store: st, Root: root, Identity: name}
		if err := b.Publish(storetest.Context(t), ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		actx, acancel := context.WithCancel(context.Background())
		rctx, rcancel := context.WithCancel(context.Background())
		apiDone, runDone := make(chan struct{}), make(chan struct{})
		go func() { mgmtapi.Serve(actx, ln, b, mgmtapi.Options{TLS: srvTLS, ForwardTLS: fwdTLS}); close(apiDone) }()
		go func() {
			controller.Run(rctx, st, root, controller.RunOptions{Identity: name, ReconcileEvery: time.Hour})
			close(runDone)
		}()
		t.Cleanup(func() { acancel(); rcancel(); <-apiDone; <-runDone })
		ctls[name] = &memberController{name: name, api: ln.Addr().String(), st: st,
			stopAPI: func() { acancel(); <-apiDone }, stopRun: func() { rcancel(); <-runDone }}
	}
	ctx := ctx10(t)
	client := func(who string, cs ...*memberController) *mgmtapi.Client {
		tlsConf, err := mgmtapi.ClientTLS(nodeauth.FilesIn(certs, who))
		if err != nil {
			t.Fatal(err)
		}
		var addrs []string
		for _, c := range cs {
			addrs = append(addrs, c.api)
		}
		cl, err := mgmtapi.Dial(addrs, tlsConf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	leader := func(not string) *memberController {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if name, err := ctls["ctla"].st.Leader(ctx, controller.ElectionKey(root)); err == nil && name != not {
				return ctls[name]
			}
		}
		t.Fatalf("no controller but %q elected", not)
		return nil
	}
	lead := leader("")
	var standbys []*memberController
	for _, name := range []string{"ctla", "ctlb", "ctlc"} {
		if name != lead.name {
			standbys = append(standbys, ctls[name])
		}
	}
	t.Logf("elected: %s; standbys %s, %s", lead.name, standbys[0].name, standbys[1].name)

	// Changes through a standby reach the elected controller.
	viaStandby := client("alice", standbys[0])
	if _, err := viaStandby.Submit(ctx, controller.Request{Op: controller.OpCreateInstance, Instance: "web", Config: webConfig()}); err != nil {
		t.Fatalf("create through standby %s: %v", standbys[0].name, err)
	}
	if _, err := client("alice", standbys[1]).Submit(ctx, controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: 1025,
		Addr: netip.MustParseAddr("198.18.0.25"), Weight: 1}); err != nil {
		t.Fatalf("add-dip through standby %s: %v", standbys[1].name, err)
	}
	reads := func(what string) {
		t.Helper()
		for _, s := range standbys {
			v, err := client("bob", s).Show(ctx, "web")
			if err != nil || len(v.DIPs) != 1 {
				t.Fatalf("%s: show through standby %s: %v %+v", what, s.name, err, v)
			}
			names, err := client("bob", s).Instances(ctx)
			if err != nil || strings.Join(names, ",") != "web" {
				t.Fatalf("%s: list through standby %s: %v, %v", what, s.name, names, err)
			}
		}
	}
	reads("all APIs up")

	// The elected controller's API goes down; it stays elected.
	lead.stopAPI()
	reads("the elected controller's API down")
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := viaStandby.Submit(sctx, controller.Request{Op: controller.OpSetWeight, Instance: "web", ID: 1025, Weight: 2})
	cancel()
	if err == nil || !strings.Contains(err.Error(), lead.name) || !strings.Contains(err.Error(), lead.api) {
		t.Fatalf("a change through a standby with the elected controller's API down: %v; want a refusal naming %s at %s", err, lead.name, lead.api)
	}
	t.Logf("refused: %v", err)
	if name, err := lead.st.Leader(ctx, controller.ElectionKey(root)); err != nil || name != lead.name {
		t.Fatalf("the elected controller changed while its API was down: %q, %v", name, err)
	}

	// The elected controller stops: a standby is elected, and a change
	// through the two left succeeds.
	lead.stopRun()
	next := leader(lead.name)
	if _, err := client("alice", standbys...).Submit(ctx, controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: 1026,
		Addr: netip.MustParseAddr("198.18.0.26"), Weight: 1}); err != nil {
		t.Fatalf("add-dip after %s took over: %v", next.name, err)
	}
	for _, s := range standbys {
		v, err := client("bob", s).Show(ctx, "web")
		if err != nil || len(v.DIPs) != 2 {
			t.Fatalf("show through %s after the failover: %v %+v", s.name, err, v)
		}
	}
	t.Logf("after the failover: %s elected", next.name)
}
