package mgmtapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Client calls the management API at one or more controller addresses,
// in order, moving on while an address is unreachable or answers
// Unavailable. It is what `beamer ctl` uses, and it has the three methods
// of the declarative package's Operator (Submit, Show, Instances).
type Client struct {
	addrs []string
	conns []*grpc.ClientConn
}

// Dial prepares a client of the API at addrs (HOST:PORT each); tlsConf
// nil is plaintext. No connection is made before the first call.
func Dial(addrs []string, tlsConf *tls.Config) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no API address")
	}
	creds := insecure.NewCredentials()
	if tlsConf != nil {
		creds = credentials.NewTLS(tlsConf)
	}
	c := &Client{}
	for _, a := range addrs {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(creds))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("API address %q: %w", a, err)
		}
		c.addrs, c.conns = append(c.addrs, a), append(c.conns, conn)
	}
	return c, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	for _, conn := range c.conns {
		conn.Close()
	}
	return nil
}

// call runs fn against each address until one answers something other
// than Unavailable. With wait, it goes round the addresses again until
// ctx ends (a change waits for a controller that is starting, as a
// request in the store did); a read answers at once. The error keeps the
// server's message as its text.
func (c *Client) call(ctx context.Context, wait bool, fn func(mgmtv1.ManagementClient) error) error {
	return c.callAt(ctx, wait, false, func(m mgmtv1.ManagementClient, _ ...grpc.CallOption) error { return fn(m) })
}

// change is call for a change, which must not reach two controllers: it
// is sent only on a connected connection, and goes on to the next address
// only when the one before certainly did not get it (not connected, or a
// controller that refused it before submitting: notSubmittedKey). A call
// that broke after it was sent returns ErrOutcomeUnknown.
func (c *Client) change(ctx context.Context, fn func(mgmtv1.ManagementClient, ...grpc.CallOption) error) error {
	return c.callAt(ctx, true, true, fn)
}

func (c *Client) callAt(ctx context.Context, wait, change bool, fn func(mgmtv1.ManagementClient, ...grpc.CallOption) error) error {
	pause := 100 * time.Millisecond
	for {
		var why []string
		tried := make([]bool, len(c.conns))
		for {
			i := c.nextReady(ctx, tried)
			if i < 0 {
				break
			}
			tried[i] = true
			var trailer metadata.MD
			err := fn(mgmtv1.NewManagementClient(c.conns[i]), grpc.Trailer(&trailer))
			st, _ := status.FromError(err)
			if err == nil || st.Code() != codes.Unavailable {
				return plain(err)
			}
			if change && !notSubmitted(trailer) {
				return fmt.Errorf("%w: the call to %s broke after the change was sent (%s): it may or may not have been made; check with `beamer ctl show` before sending it again",
					ErrOutcomeUnknown, c.addrs[i], st.Message())
			}
			why = append(why, fmt.Sprintf("%s: %s", c.addrs[i], st.Message()))
		}
		for i, t := range tried {
			if !t {
				why = append(why, fmt.Sprintf("%s: not reachable", c.addrs[i]))
			}
		}
		if wait && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
				pause = min(2*pause, time.Second)
				continue
			}
		}
		return fmt.Errorf("no controller answered (is `beamer controller` running, and --api right?): %s", strings.Join(why, "; "))
	}
}

// plain turns a status error into an error whose text is the server's
// message (ctl prints controller verdicts as they are).
func plain(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &Error{Code: st.Code(), Msg: st.Message()}
}

// Error is an answer of the API other than success.
type Error struct {
	Code codes.Code
	Msg  string
}

func (e *Error) Error() string {
	if e.Code == codes.PermissionDenied {
		return "permission denied: " + e.Msg
	}
	return e.Msg
}

// Submit runs one controller request through its RPC and waits for the
// outcome, as controller.SubmitResult does.
func (c *Client) Submit(ctx context.Context, r controller.Request) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		// The server waits DefaultTimeout for the verdict; without a
		// deadline a missing controller would be waited for forever.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout+5*time.Second)
		defer cancel()
	}
	var resp *mgmtv1.ChangeResponse
	err := c.change(ctx, func(m mgmtv1.ManagementClient, opts ...grpc.CallOption) error {
		var err error
		resp, err = submitRPC(ctx, m, r, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	return resp.GetResult(), nil
}

func submitRPC(ctx context.Context, m mgmtv1.ManagementClient, r controller.Request, opts ...grpc.CallOption) (*mgmtv1.ChangeResponse, error) {
	switch r.Op {
	case controller.OpCreateInstance:
		if r.Config == nil {
			return nil, errors.New("create-instance without a configuration")
		}
		b, err := json.Marshal(r.Config)
		if err != nil {
			return nil, err
		}
		return m.CreateInstance(ctx, &mgmtv1.CreateInstanceRequest{ConfigJson: b}, opts...)
	case controller.OpDeleteInstance:
		return m.DeleteInstance(ctx, &mgmtv1.DeleteInstanceRequest{Instance: r.Instance}, opts...)
	case controller.OpAddDIP:
		req := &mgmtv1.AddDIPsRequest{Instance: r.Instance}
		if len(r.DIPs) == 0 {
			req.Dips = append(req.Dips, &mgmtv1.DIP{Id: uint32(r.ID), Address: addrString(r.Addr), Weight: r.Weight})
		}
		for _, d := range r.DIPs {
			req.Dips = append(req.Dips, &mgmtv1.DIP{Id: uint32(d.ID), Address: addrString(d.Addr), Weight: d.Weight})
		}
		return m.AddDIPs(ctx, req, opts...)
	case controller.OpRemoveDIP:
		req := &mgmtv1.RemoveDIPsRequest{Instance: r.Instance}
		if len(r.IDs) == 0 {
			req.Ids = append(req.Ids, uint32(r.ID))
		}
		for _, id := range r.IDs {
			req.Ids = append(req.Ids, uint32(id))
		}
		return m.RemoveDIPs(ctx, req, opts...)
	case controller.OpSetWeight:
		return m.SetWeight(ctx, &mgmtv1.SetWeightRequest{Instance: r.Instance, Id: uint32(r.ID), Weight: r.Weight}, opts...)
	case controller.OpDrain:
		return m.Drain(ctx, &mgmtv1.ServerRequest{Instance: r.Instance, Id: uint32(r.ID)}, opts...)
	case controller.OpUndrain:
		return m.Undrain(ctx, &mgmtv1.ServerRequest{Instance: r.Instance, Id: uint32(r.ID)}, opts...)
	case controller.OpHealthClear:
		return m.HealthClear(ctx, &mgmtv1.ServerRequest{Instance: r.Instance, Id: uint32(r.ID)}, opts...)
	case controller.OpDefrag:
		req := &mgmtv1.DefragRequest{Instance: r.Instance, Steps: int32(min(r.Steps, controller.MaxDefragSteps))}
		if r.Defrag != nil {
			b, err := json.Marshal(r.Defrag)
			if err != nil {
				return nil, err
			}
			req.ParamsJson = b
		}
		return m.Defrag(ctx, req, opts...)
	case controller.OpCheetahRotate:
		req := &mgmtv1.CheetahRotateKeyRequest{Instance: r.Instance}
		if rot := r.Rotation; rot != nil {
			req.Settle, req.MinAge, req.Force = durationpb.New(rot.Settle), durationpb.New(rot.MinAge), rot.Force
		}
		return m.CheetahRotateKey(ctx, req, opts...)
	}
	return nil, fmt.Errorf("unknown operation %q", r.Op)
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// Show is one instance's view, as controller.Show.
func (c *Client) Show(ctx context.Context, name string) (*controller.View, error) {
	var resp *mgmtv1.ShowInstanceResponse
	err := c.call(ctx, false, func(m mgmtv1.ManagementClient) error {
		var err error
		resp, err = m.ShowInstance(ctx, &mgmtv1.ShowInstanceRequest{Name: name})
		return err
	})
	if err != nil {
		return nil, err
	}
	var v controller.View
	if err := json.Unmarshal(resp.GetViewJson(), &v); err != nil {
		return nil, fmt.Errorf("the controller's view of %s: %w", name, err)
	}
	return &v, nil
}

// Instances is every instance name, sorted.
func (c *Client) Instances(ctx context.Context) ([]string, error) {
	r, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	return r.GetNames(), nil
}

// List is ListInstances' answer.
func (c *Client) List(ctx context.Context) (*mgmtv1.ListInstancesResponse, error) {
	var resp *mgmtv1.ListInstancesResponse
	err := c.call(ctx, false, func(m mgmtv1.ManagementClient) error {
		var err error
		resp, err = m.ListInstances(ctx, &mgmtv1.ListInstancesRequest{})
		return err
	})
	return resp, err
}

// Lookup is ctl lookup's JSON document.
func (c *Client) Lookup(ctx context.Context, r *mgmtv1.LookupRequest) ([]byte, error) {
	var resp *mgmtv1.LookupResponse
	err := c.call(ctx, false, func(m mgmtv1.ManagementClient) error {
		var err error
		resp, err = m.Lookup(ctx, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetLookupJson(), nil
}

// Watch calls fn with every event until ctx ends, fn fails or the stream
// ends.
func (c *Client) Watch(ctx context.Context, instance string, fn func(*mgmtv1.WatchEvent) error) error {
	return c.call(ctx, false, func(m mgmtv1.ManagementClient) error {
		s, err := m.Watch(ctx, &mgmtv1.WatchRequest{Instance: instance})
		if err != nil {
			return err
		}
		for {
			e, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	})
}

// DefaultTimeout is how long the server waits for the controller's
// verdict on a change whose call has no deadline (StoreBackend.Submit).
const DefaultTimeout = 30 * time.Second
