package mgmtapi_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// rig is two real controllers (election, health checks, the request
// loop) on one embedded etcd, each serving the management API with mutual
// TLS on loopback, and certificates issued by scripts/store-certs.sh.
type rig struct {
	st       store.Store
	root     string
	certs    string
	apis     map[string]string // identity → API address
	deadDIP  atomic.Uint32     // the server whose probe fails
	probeErr error
}

const root = "/mgmtapitest"

func newRig(t *testing.T) *rig {
	t.Helper()
	st := storetest.EmbeddedT(t)
	r := &rig{st: st, root: root, certs: t.TempDir(), apis: map[string]string{}, probeErr: errors.New("refused")}
	if err := nodeauth.Issue(r.certs, "127.0.0.1", "ctla=controller@127.0.0.1", "ctlb=controller@127.0.0.1",
		"alice=admin", "bob=read", "mux1=mux@127.0.0.1", "plain"); err != nil {
		t.Fatal(err)
	}
	return r
}

// start runs controller identity with its API; it returns the address.
func (r *rig) start(t *testing.T, identity string) string {
	t.Helper()
	files := nodeauth.FilesIn(r.certs, identity)
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
	ctx, cancel := context.WithCancel(context.Background())
	b := &mgmtapi.StoreBackend{Store: r.st, Root: r.root, Identity: identity}
	if err := b.Publish(ctx, ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() {
		mgmtapi.Serve(ctx, ln, b, mgmtapi.Options{TLS: srvTLS, ForwardTLS: fwdTLS})
		done <- struct{}{}
	}()
	probe := func(_ context.Context, _ *forwarding.Instance, d controller.DIP) error {
		if uint32(d.ID) == r.deadDIP.Load() {
			return r.probeErr
		}
		return nil
	}
	go func() {
		controller.Run(ctx, r.st, r.root, controller.RunOptions{Identity: identity, ReconcileEvery: time.Hour,
			Health: &controller.HealthOptions{Interval: 50 * time.Millisecond, Probe: probe}})
		done <- struct{}{}
	}()
	t.Cleanup(func() { cancel(); <-done; <-done })
	r.apis[identity] = ln.Addr().String()
	return ln.Addr().String()
}

func (r *rig) waitLeader(t *testing.T, want string) {
	t.Helper()
	ctx := storetest.Context(t)
	for i := 0; ; i++ {
		if l, err := r.st.Leader(ctx, controller.ElectionKey(r.root)); err == nil && l == want {
			return
		}
		if i > 400 {
			t.Fatalf("%s never elected", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client is a Client of addrs with the certificate of name.
func (r *rig) client(t *testing.T, name string, addrs ...string) *mgmtapi.Client {
	t.Helper()
	tlsConf, err := mgmtapi.ClientTLS(nodeauth.FilesIn(r.certs, name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mgmtapi.Dial(addrs, tlsConf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a generated client with the certificate of name (to call each
// RPC by itself).
func (r *rig) raw(t *testing.T, name, addr string) mgmtv1.ManagementClient {
	t.Helper()
	tlsConf, err := mgmtapi.ClientTLS(nodeauth.FilesIn(r.certs, name))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return mgmtv1.NewManagementClient(conn)
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func webConfig() *forwarding.Instance {
	return &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}
}

// mutating calls every admin RPC once, with arguments valid for an
// instance "web" with servers 1025 and 1026.
var mutating = map[string]func(context.Context, mgmtv1.ManagementClient) error{
	"CreateInstance": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.CreateInstance(ctx, &mgmtv1.CreateInstanceRequest{ConfigJson: []byte(`{"name":"other","strategy":"beamer","vips":["198.18.100.9"],"port_low":80,"port_high":80,"buckets":100,"chain_window":10000000000}`)})
		return err
	},
	"DeleteInstance": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.DeleteInstance(ctx, &mgmtv1.DeleteInstanceRequest{Instance: "web"})
		return err
	},
	"AddDIPs": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.AddDIPs(ctx, &mgmtv1.AddDIPsRequest{Instance: "web", Dips: []*mgmtv1.DIP{{Id: 1030, Address: "198.18.0.30", Weight: 1}}})
		return err
	},
	"RemoveDIPs": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.RemoveDIPs(ctx, &mgmtv1.RemoveDIPsRequest{Instance: "web", Ids: []uint32{1025}})
		return err
	},
	"SetWeight": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.SetWeight(ctx, &mgmtv1.SetWeightRequest{Instance: "web", Id: 1025, Weight: 5})
		return err
	},
	"Drain": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.Drain(ctx, &mgmtv1.ServerRequest{Instance: "web", Id: 1025})
		return err
	},
	"Undrain": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.Undrain(ctx, &mgmtv1.ServerRequest{Instance: "web", Id: 1025})
		return err
	},
	"Defrag": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.Defrag(ctx, &mgmtv1.DefragRequest{Instance: "web", Steps: 1})
		return err
	},
	"HealthClear": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.HealthClear(ctx, &mgmtv1.ServerRequest{Instance: "web", Id: 1025})
		return err
	},
	"CheetahRotateKey": func(ctx context.Context, m mgmtv1.ManagementClient) error {
		_, err := m.CheetahRotateKey(ctx, &mgmtv1.CheetahRotateKeyRequest{Instance: "web"})
		return err
	},
}

// TestMutatingTableIsComplete: the table above names every RPC of the
// service that is not a read RPC, so a new admin RPC is tested too.
func TestMutatingTableIsComplete(t *testing.T) {
	reads := map[string]bool{"ListInstances": true, "ShowInstance": true, "Lookup": true, "Watch": true}
	var n int
	for _, m := range mgmtv1.Management_ServiceDesc.Methods {
		if !reads[m.MethodName] {
			n++
			if mutating[m.MethodName] == nil {
				t.Errorf("admin RPC %s is not in the table", m.MethodName)
			}
		}
	}
	if n != len(mutating) {
		t.Errorf("%d admin RPCs, table has %d", n, len(mutating))
	}
}

// TestManagementAPI: an elected controller and a standby, each serving the
// API. A read certificate is refused on every mutating RPC (on both), may
// list, show and look up; a node certificate may call nothing; admin
// changes state through the standby, which forwards to the elected
// controller; a watch through the standby sees a server's health go down.
func TestManagementAPI(t *testing.T) {
	r := newRig(t)
	a := r.start(t, "ctla")
	r.waitLeader(t, "ctla")
	b := r.start(t, "ctlb")
	ctx := ctx10(t)

	admin := r.client(t, "alice", a)
	if _, err := admin.Submit(ctx, controller.Request{Op: controller.OpCreateInstance, Instance: "web", Config: webConfig()}); err != nil {
		t.Fatal(err)
	}
	// Through the standby: forwarded to the elected controller.
	viaB := r.client(t, "alice", b)
	for _, id := range []forwarding.ServerID{1025, 1026} {
		if _, err := viaB.Submit(ctx, controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: id,
			Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(id - 1000)}), Weight: 1}); err != nil {
			t.Fatalf("add %d through the standby: %v", id, err)
		}
	}
	// A controller-side error keeps its message through the standby.
	if _, err := viaB.Submit(ctx, controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: 1025,
		Addr: netip.MustParseAddr("198.18.0.99"), Weight: 1}); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("duplicate id through the standby: %v", err)
	}
	v, err := viaB.Show(ctx, "web")
	if err != nil || len(v.DIPs) != 2 {
		t.Fatalf("show through the standby: %v %+v", err, v)
	}
	names, err := r.client(t, "bob", b).Instances(ctx)
	if err != nil || strings.Join(names, ",") != "web" {
		t.Fatalf("read: instances %v, %v", names, err)
	}

	// The read certificate: every mutating RPC refused, at both controllers,
	// and nothing changed.
	for _, addr := range []string{a, b} {
		m := r.raw(t, "bob", addr)
		for name, call := range mutating {
			err := call(ctx, m)
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), name) {
				t.Errorf("read certificate, %s at %s: %v, want PermissionDenied naming it", name, addr, err)
			}
		}
		if _, err := m.ShowInstance(ctx, &mgmtv1.ShowInstanceRequest{Name: "web"}); err != nil {
			t.Errorf("read certificate, ShowInstance at %s: %v", addr, err)
		}
		if _, err := m.Lookup(ctx, &mgmtv1.LookupRequest{Instance: "web", Client: "198.18.1.5:40000"}); status.Code(err) != codes.Unimplemented {
			t.Errorf("read certificate, Lookup at %s (no lookup builder in this rig): %v", addr, err)
		}
		// Node roles: nothing here.
		for _, node := range []string{"mux1", "ctlb"} {
			_, err := r.raw(t, node, addr).ListInstances(ctx, &mgmtv1.ListInstancesRequest{})
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s certificate, ListInstances at %s: %v, want PermissionDenied", node, addr, err)
			}
		}
	}
	after, err := admin.Show(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != v.Generation || len(after.DIPs) != 2 {
		t.Errorf("refused calls changed the instance: generation %d → %d, %d servers", v.Generation, after.Generation, len(after.DIPs))
	}

	// A certificate without a role, and none at all: no call.
	if _, err := r.raw(t, "plain", a).ListInstances(ctx, &mgmtv1.ListInstancesRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("certificate without a role: %v", err)
	}

	// The admin certificate: every mutating RPC accepted (the last ones
	// delete what the first created).
	m := r.raw(t, "alice", b)
	for _, name := range []string{"SetWeight", "Drain", "Undrain", "HealthClear", "Defrag", "AddDIPs", "RemoveDIPs", "CreateInstance"} {
		if err := mutating[name](ctx, m); err != nil {
			t.Errorf("admin, %s through the standby: %v", name, err)
		}
	}
	if err := mutating["CheetahRotateKey"](ctx, m); status.Code(err) == codes.PermissionDenied || err == nil || !strings.Contains(err.Error(), "cheetah") {
		t.Errorf("admin, CheetahRotateKey of a beamer instance: %v, want the controller's refusal", err)
	}
	if _, err := m.DeleteInstance(ctx, &mgmtv1.DeleteInstanceRequest{Instance: "other"}); err != nil {
		t.Errorf("admin, DeleteInstance: %v", err)
	}

	// The watch, through the standby: server 1026's health goes down.
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	seen := make(chan *mgmtv1.WatchEvent, 1)
	first := make(chan struct{})
	go func() {
		var once bool
		r.client(t, "bob", b).Watch(wctx, "web", func(e *mgmtv1.WatchEvent) error {
			if !once && e.GetKind() == "instance" {
				once = true
				close(first)
			}
			if e.GetKind() == "health" && e.GetServerId() == 1026 && e.GetNewValue() != "up" && e.GetOldValue() == "up" {
				seen <- e
				return errors.New("done")
			}
			return nil
		})
	}()
	select {
	case <-first:
	case <-wctx.Done():
		t.Fatal("the watch sent no first picture")
	}
	r.deadDIP.Store(1026)
	select {
	case e := <-seen:
		t.Logf("watch: %s %s server %d %s → %s at generation %d", e.GetKind(), e.GetInstance(), e.GetServerId(), e.GetOldValue(), e.GetNewValue(), e.GetGeneration())
	case <-wctx.Done():
		t.Fatal("the watch saw no health transition of server 1026")
	}
}

// TestClientNoController: a client of an address where nothing listens
// says so, naming the address.
func TestClientNoController(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := mgmtapi.Dial([]string{addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Instances(ctx)
	if err == nil || !strings.Contains(err.Error(), "no controller answered") || !strings.Contains(err.Error(), addr) {
		t.Errorf("no controller: %v", err)
	}
}
