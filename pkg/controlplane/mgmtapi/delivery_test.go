package mgmtapi

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeController answers AddDIPs as behave says, counting the calls.
type fakeController struct {
	mgmtv1.UnimplementedManagementServer
	calls  atomic.Int32
	behave func(ctx context.Context) error
}

func (f *fakeController) AddDIPs(ctx context.Context, _ *mgmtv1.AddDIPsRequest) (*mgmtv1.ChangeResponse, error) {
	f.calls.Add(1)
	if err := f.behave(ctx); err != nil {
		return nil, err
	}
	return &mgmtv1.ChangeResponse{Result: "done"}, nil
}

// serveFake serves f on a loopback port until the test ends.
func serveFake(t *testing.T, f *fakeController) (addr string, srv *grpc.Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = grpc.NewServer()
	mgmtv1.RegisterManagementServer(srv, f)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return l.Addr().String(), srv
}

// deadAddr is a loopback port nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// TestChangeSentOnce: a change goes on to the next controller only when
// the one before certainly did not get it. A call that broke after it was
// sent (the controller died during it) is reported as of unknown outcome,
// never as failed, and is not sent again to another controller: sent
// twice, it may be made twice, and a controller that made it and died
// would have it reported failed (the partition rig's checker found this).
func TestChangeSentOnce(t *testing.T) {
	add := controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: 1025, Addr: netip.MustParseAddr("198.18.0.10"), Weight: 1}
	ok := func(context.Context) error { return nil }
	for _, c := range []struct {
		name        string
		first       func(t *testing.T, second string) string // the first address
		secondCalls int32
		unknown     bool
	}{
		{name: "first not listening: the second gets it", secondCalls: 1,
			first: func(t *testing.T, _ string) string { return deadAddr(t) }},
		{name: "first refuses before submitting: the second gets it", secondCalls: 1,
			first: func(t *testing.T, _ string) string {
				addr, _ := serveFake(t, &fakeController{behave: func(ctx context.Context) error {
					return refuseUnsubmitted(ctx, status.Error(codes.Unavailable, "not the elected controller"))
				}})
				return addr
			}},
		{name: "first dies during the call: unknown, not sent again", unknown: true,
			first: func(t *testing.T, _ string) string {
				var srv *grpc.Server
				f := &fakeController{}
				f.behave = func(context.Context) error {
					go srv.Stop() // the controller dies with the call open
					time.Sleep(5 * time.Second)
					return nil
				}
				var addr string
				addr, srv = serveFake(t, f)
				return addr
			}},
		{name: "first answers Unavailable without saying it did not submit: unknown", unknown: true,
			first: func(t *testing.T, _ string) string {
				addr, _ := serveFake(t, &fakeController{behave: func(context.Context) error {
					return status.Error(codes.Unavailable, "the elected controller does not answer")
				}})
				return addr
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			second := &fakeController{behave: ok}
			secondAddr, _ := serveFake(t, second)
			first := c.first(t, secondAddr)
			cl, err := Dial([]string{first, secondAddr}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := cl.Submit(ctx, add)
			if c.unknown {
				if !errors.Is(err, ErrOutcomeUnknown) {
					t.Fatalf("Submit: %q, %v; want the outcome unknown", res, err)
				}
			} else if err != nil || res != "done" {
				t.Fatalf("Submit: %q, %v", res, err)
			}
			if got := second.calls.Load(); got != c.secondCalls {
				t.Errorf("the second controller got %d calls, want %d", got, c.secondCalls)
			}
		})
	}
}

// silentAddr is a loopback port that accepts connections and never
// answers: a controller whose host is cut off, as a gRPC dial sees it
// (the dial hangs instead of failing).
func silentAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

// TestSilentFirstAddress: a first address whose dial hangs (issue 26: a
// cut controller host held every ctl command for the 5 s connect limit)
// yields to the next one, which gets the change once, well before the
// connect limit; a read goes there too.
func TestSilentFirstAddress(t *testing.T) {
	second := &fakeController{behave: func(context.Context) error { return nil }}
	secondAddr, _ := serveFake(t, second)
	cl, err := Dial([]string{silentAddr(t), secondAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	add := controller.Request{Op: controller.OpAddDIP, Instance: "web", ID: 1025, Addr: netip.MustParseAddr("198.18.0.10"), Weight: 1}
	if res, err := cl.Submit(ctx, add); err != nil || res != "done" {
		t.Fatalf("Submit: %q, %v", res, err)
	}
	if took := time.Since(start); took >= connectLimit {
		t.Errorf("the change took %v: it waited for the silent address's connect limit (%v)", took, connectLimit)
	}
	if got := second.calls.Load(); got != 1 {
		t.Errorf("the second controller got %d calls, want 1", got)
	}
}
