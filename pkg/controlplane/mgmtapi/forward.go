package mgmtapi

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// A standby controller answers reads itself, from the store, and forwards
// every change (after checking the caller's role itself) to the elected
// controller, naming the verified role in the call's metadata; a call
// that was forwarded already is not forwarded again (Unavailable, naming
// the elected controller).

// target is where a call runs: nil means here. Every read (list,
// show, lookup, watch) is answered here from the store, as the elected
// controller would answer it (its answers come from the store too): a
// standby serves reads whether or not the elected controller's API can be
// reached, and whether or not one is elected. A change runs at the
// elected controller, or waits for one (Unavailable: the client retries).
func (s *Server) target(ctx context.Context, method string) (*forwardTo, error) {
	if readMethods[method] {
		// On ZooKeeper this controller's server may not have applied a
		// change the caller just saw acknowledged through another
		// controller: bring it up to date first (store.Syncer).
		if err := store.SyncReads(ctx, s.b.Store); err != nil {
			return nil, status.Errorf(codes.Unavailable, "reading the store: %v", err)
		}
		return nil, nil
	}
	self, name, addr, err := s.b.Leader(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "this controller is not elected and cannot reach the elected one: %v", err)
	}
	if self {
		return nil, nil
	}
	ci := infoOf(ctx)
	if ci.forwarded {
		return nil, status.Errorf(codes.Unavailable, "not the elected controller: %q is (at %s)", name, addr)
	}
	conn, err := s.leaderConn(addr)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "not the elected controller (%q is): %v", name, err)
	}
	return &forwardTo{conn: conn, ctx: metadata.AppendToOutgoingContext(ctx, forwardedRoleKey, string(ci.role)), name: name, addr: addr}, nil
}

// forwardTo is the elected controller a standby forwards a call to.
type forwardTo struct {
	conn       *grpc.ClientConn
	ctx        context.Context // the call's, naming the caller's role
	name, addr string
}

// failed names the elected controller in a forwarded call's Unavailable
// (its API does not answer: down, or unreachable from this standby), so
// that the caller learns who leads and where, not only that a connection
// failed.
func (f *forwardTo) failed(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	return status.Errorf(codes.Unavailable, "not the elected controller; the elected one, %q at %s, does not answer: %s", f.name, f.addr, st.Message())
}

// messageOf is a new message of the input or output type of method.
func messageOf(method string, output bool) (proto.Message, error) {
	short := method[strings.LastIndex(method, "/")+1:]
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(mgmtv1.Management_ServiceDesc.ServiceName))
	if err != nil {
		return nil, err
	}
	m := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(short))
	if m == nil {
		return nil, status.Errorf(codes.Unimplemented, "no method %s", method)
	}
	md := m.Input()
	if output {
		md = m.Output()
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

func (s *Server) forwardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	to, err := s.target(ctx, info.FullMethod)
	if err != nil {
		return nil, refuseUnsubmitted(ctx, err) // nothing was sent anywhere
	}
	if to == nil {
		return h(ctx, req)
	}
	reply, err := messageOf(info.FullMethod, true)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if !ready(to.ctx, to.conn) {
		// Not sent: the elected controller's API cannot be reached.
		return nil, refuseUnsubmitted(ctx, to.failed(status.Error(codes.Unavailable, "no connection")))
	}
	if err := to.conn.Invoke(to.ctx, info.FullMethod, req, reply); err != nil {
		// Sent on a live connection: if it broke, the elected controller
		// may have made the change; no trailer, so the caller does not
		// send it again elsewhere.
		return nil, to.failed(err)
	}
	return reply, nil
}

func (s *Server) forwardStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	to, err := s.target(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if to == nil {
		return h(srv, ss)
	}
	req, err := messageOf(info.FullMethod, false)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	cs, err := to.conn.NewStream(to.ctx, &grpc.StreamDesc{ServerStreams: true}, info.FullMethod)
	if err != nil {
		return to.failed(err)
	}
	if err := cs.SendMsg(req); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for {
		m, err := messageOf(info.FullMethod, true)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if err := cs.RecvMsg(m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}
