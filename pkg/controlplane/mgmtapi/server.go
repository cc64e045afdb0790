package mgmtapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Server serves the management API from a StoreBackend.
type Server struct {
	mgmtv1.UnimplementedManagementServer
	b *StoreBackend
	// forwardTLS is this controller's client identity towards the
	// elected one (nil: plaintext).
	forwardTLS *tls.Config
	// WatchEvery is how often Watch compares the instances' views.
	WatchEvery time.Duration

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // the elected controller's API, by address
}

// Options of Serve.
type Options struct {
	// TLS is the API's server TLS (nodeauth.ServerConfig with role
	// controller); nil serves plaintext, which the caller allows only on
	// loopback or with --insecure.
	TLS *tls.Config
	// ForwardTLS is the client TLS a standby forwards calls with (the same
	// certificate, role controller); nil when TLS is nil.
	ForwardTLS *tls.Config
}

// Serve serves the API on ln until ctx ends; the listener is bounded by
// connLimits' connection budgets.
func Serve(ctx context.Context, ln net.Listener, b *StoreBackend, o Options) error {
	s := &Server{b: b, forwardTLS: o.ForwardTLS, WatchEvery: 500 * time.Millisecond, conns: map[string]*grpc.ClientConn{}}
	opts := serverOptions(newSourceLimits())
	if o.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	opts = append(opts, grpc.ChainUnaryInterceptor(s.forwardUnary), grpc.ChainStreamInterceptor(s.forwardStream))
	g := grpc.NewServer(opts...)
	mgmtv1.RegisterManagementServer(g, s)
	go func() {
		<-ctx.Done()
		g.Stop()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	}()
	err := g.Serve(httpserver.LimitConns(ln, connLimits))
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// toStatus gives an error its gRPC code. Unavailable is kept for "not
// the elected controller" (clients try the next address on it).
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, controller.ErrNotFinished), errors.Is(err, controller.ErrOutcomeUnknown):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, controller.ErrNoController):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, store.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, controller.ErrBadRequest):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.FailedPrecondition, err.Error())
}

func (s *Server) change(ctx context.Context, r controller.Request) (*mgmtv1.ChangeResponse, error) {
	res, err := s.b.Submit(ctx, r)
	if err != nil {
		return nil, toStatus(err)
	}
	return &mgmtv1.ChangeResponse{Result: res}, nil
}

func serverID(id uint32) (forwarding.ServerID, error) {
	if id < uint32(forwarding.MinServerID) || id > uint32(forwarding.MaxServerID) {
		return 0, errorf(codes.InvalidArgument, "server id %d must be in %d–%d", id, forwarding.MinServerID, forwarding.MaxServerID)
	}
	return forwarding.ServerID(id), nil
}

func (s *Server) ListInstances(ctx context.Context, _ *mgmtv1.ListInstancesRequest) (*mgmtv1.ListInstancesResponse, error) {
	names, err := s.b.Instances(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	r := &mgmtv1.ListInstancesResponse{Names: names, Controller: s.b.Controller(ctx)}
	if s.b.ListJSON != nil {
		if r.ListJson, err = s.b.ListJSON(ctx, s.b.Store, s.b.Root); err != nil {
			return nil, toStatus(err)
		}
	}
	return r, nil
}

func (s *Server) ShowInstance(ctx context.Context, r *mgmtv1.ShowInstanceRequest) (*mgmtv1.ShowInstanceResponse, error) {
	v, err := s.b.Show(ctx, r.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, toStatus(err)
	}
	return &mgmtv1.ShowInstanceResponse{ViewJson: b}, nil
}

func (s *Server) Lookup(ctx context.Context, r *mgmtv1.LookupRequest) (*mgmtv1.LookupResponse, error) {
	if s.b.LookupJSON == nil {
		return nil, status.Error(codes.Unimplemented, "lookup is not served here")
	}
	b, err := s.b.LookupJSON(ctx, s.b.Store, s.b.Root, r)
	if err != nil {
		return nil, toStatus(err)
	}
	return &mgmtv1.LookupResponse{LookupJson: b}, nil
}

func (s *Server) CreateInstance(ctx context.Context, r *mgmtv1.CreateInstanceRequest) (*mgmtv1.ChangeResponse, error) {
	var in forwarding.Instance
	if err := json.Unmarshal(r.GetConfigJson(), &in); err != nil {
		return nil, errorf(codes.InvalidArgument, "config_json: %v", err)
	}
	if err := controller.CheckInstance(&in); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return s.change(ctx, controller.Request{Op: controller.OpCreateInstance, Instance: in.Name, Config: &in})
}

func (s *Server) DeleteInstance(ctx context.Context, r *mgmtv1.DeleteInstanceRequest) (*mgmtv1.ChangeResponse, error) {
	return s.change(ctx, controller.Request{Op: controller.OpDeleteInstance, Instance: r.GetInstance()})
}

func (s *Server) AddDIPs(ctx context.Context, r *mgmtv1.AddDIPsRequest) (*mgmtv1.ChangeResponse, error) {
	req := controller.Request{Op: controller.OpAddDIP, Instance: r.GetInstance()}
	for _, d := range r.GetDips() {
		id, err := serverID(d.GetId())
		if err != nil {
			return nil, err
		}
		a, err := netip.ParseAddr(d.GetAddress())
		if err != nil {
			return nil, errorf(codes.InvalidArgument, "DIP %d address %q: %v", id, d.GetAddress(), err)
		}
		req.DIPs = append(req.DIPs, controller.NewDIP{ID: id, Addr: a, Weight: d.GetWeight()})
	}
	switch len(req.DIPs) {
	case 0:
		return nil, status.Error(codes.InvalidArgument, "no DIP to add")
	case 1: // as ctl always sent one DIP
		req.ID, req.Addr, req.Weight, req.DIPs = req.DIPs[0].ID, req.DIPs[0].Addr, req.DIPs[0].Weight, nil
	}
	return s.change(ctx, req)
}

func (s *Server) RemoveDIPs(ctx context.Context, r *mgmtv1.RemoveDIPsRequest) (*mgmtv1.ChangeResponse, error) {
	req := controller.Request{Op: controller.OpRemoveDIP, Instance: r.GetInstance()}
	for _, x := range r.GetIds() {
		id, err := serverID(x)
		if err != nil {
			return nil, err
		}
		req.IDs = append(req.IDs, id)
	}
	switch len(req.IDs) {
	case 0:
		return nil, status.Error(codes.InvalidArgument, "no DIP to remove")
	case 1:
		req.ID, req.IDs = req.IDs[0], nil
	}
	return s.change(ctx, req)
}

func (s *Server) byID(ctx context.Context, op, instance string, id uint32, weight uint32) (*mgmtv1.ChangeResponse, error) {
	sid, err := serverID(id)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, controller.Request{Op: op, Instance: instance, ID: sid, Weight: weight})
}

func (s *Server) SetWeight(ctx context.Context, r *mgmtv1.SetWeightRequest) (*mgmtv1.ChangeResponse, error) {
	return s.byID(ctx, controller.OpSetWeight, r.GetInstance(), r.GetId(), r.GetWeight())
}

func (s *Server) Drain(ctx context.Context, r *mgmtv1.ServerRequest) (*mgmtv1.ChangeResponse, error) {
	return s.byID(ctx, controller.OpDrain, r.GetInstance(), r.GetId(), 0)
}

func (s *Server) Undrain(ctx context.Context, r *mgmtv1.ServerRequest) (*mgmtv1.ChangeResponse, error) {
	return s.byID(ctx, controller.OpUndrain, r.GetInstance(), r.GetId(), 0)
}

func (s *Server) HealthClear(ctx context.Context, r *mgmtv1.ServerRequest) (*mgmtv1.ChangeResponse, error) {
	return s.byID(ctx, controller.OpHealthClear, r.GetInstance(), r.GetId(), 0)
}

func (s *Server) Defrag(ctx context.Context, r *mgmtv1.DefragRequest) (*mgmtv1.ChangeResponse, error) {
	req := controller.Request{Op: controller.OpDefrag, Instance: r.GetInstance(), Steps: int(r.GetSteps())}
	p := assign.DefaultDefragParams // as ctl defrag without flags
	req.Defrag = &p
	if len(r.GetParamsJson()) > 0 {
		if err := json.Unmarshal(r.GetParamsJson(), &p); err != nil {
			return nil, errorf(codes.InvalidArgument, "params_json: %v", err)
		}
	}
	return s.change(ctx, req)
}

func (s *Server) CheetahRotateKey(ctx context.Context, r *mgmtv1.CheetahRotateKeyRequest) (*mgmtv1.ChangeResponse, error) {
	rot := &ctlstrategy.KeyRotation{Force: r.GetForce()}
	if r.GetSettle() != nil {
		rot.Settle = r.GetSettle().AsDuration()
	}
	if r.GetMinAge() != nil {
		rot.MinAge = r.GetMinAge().AsDuration()
	}
	return s.change(ctx, controller.Request{Op: controller.OpCheetahRotate, Instance: r.GetInstance(), Rotation: rot})
}

// leaderConn is a connection to the elected controller's API.
func (s *Server) leaderConn(addr string) (*grpc.ClientConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[addr]; ok {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if s.forwardTLS != nil {
		creds = credentials.NewTLS(s.forwardTLS)
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("elected controller's API %q: %w", addr, err)
	}
	s.conns[addr] = c
	return c, nil
}
